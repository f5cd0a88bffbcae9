"""A topic's settings, declared once: the fields of :class:`TopicSettings`.

Each field is one setting of brooq.declare_topic, declared as every setting of brooq
is (brooq.declared.setting): its name (the SQL argument's), its type (the SQL type
follows from it: int is integer, timedelta interval, bool boolean), its default
(declare_topic's), its bounds and what it means. Everything else is derived from
these fields: the keyword arguments of brooq.declare_topic, brooq.alter_topic,
brooq.aio's and Worker.handler (brooq.declared.takes_settings), the SQL statements
that declare and alter a topic (brooq.queries), the options of `brooq declare-topic`
and `brooq alter-topic`, and their help. The database checks every value (22023 out
of range): its error is the contract, and the bounds here only document those checks;
tests/test_topic_settings.py holds them, the names and the defaults to the SQL.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, LiteralString

from brooq.declared import Setting, setting, settings_of

# PostgreSQL compares intervals as if a month were 30 days: '100 years' is 36000 days.
HUNDRED_YEARS = timedelta(days=36000)


@dataclass(frozen=True, kw_only=True)
class TopicSettings:
    """The settings of a topic, as brooq.declare_topic takes them: the one place where a
    setting is declared. None, for the four settings that may be None: no limit."""

    max_attempts: int = setting(
        5, "claims before a failure is final (dead); jobs keep the value they were enqueued with",
        low=1, high=1000)
    backoff_base: timedelta = setting(
        timedelta(seconds=1), "the first retry's delay, doubled at each retry",
        low=timedelta(microseconds=1))
    backoff_max: timedelta = setting(
        timedelta(minutes=1), "the longest retry delay (at least backoff_base)", high=HUNDRED_YEARS)
    retention: timedelta = setting(
        timedelta(days=30), "how long finished jobs are kept before purge; 0s: forever",
        low=timedelta(0), high=HUNDRED_YEARS)
    max_payload_bytes: int = setting(
        1 << 20, "the largest payload or result accepted (bytes of its JSON text)",
        low=1, high=268435455)
    notify: bool = setting(True, "NOTIFY workers on enqueue; off: they poll")
    max_lease: timedelta = setting(
        timedelta(hours=1), "the longest lease a claim may give and a heartbeat renew",
        low=timedelta(seconds=1), high=timedelta(days=7))
    max_lease_losses: int = setting(
        5, "lease losses (reaps) in a row, with no outcome between, that make a job dead",
        low=1, high=1000)
    max_in_flight: int | None = setting(
        None, "at most this many jobs of the topic processing at once, across all workers",
        low=1, high=1000000)
    rate: int | None = setting(
        None, "at most this many jobs claimed in any window of per", low=1, high=1000000)
    per: timedelta | None = setting(
        None, "the rate's window (1s when a rate is given without one)",
        low=timedelta(milliseconds=1), high=timedelta(days=1))
    max_execution: timedelta | None = setting(
        None, "the longest a job may take across all its attempts, from its first claim",
        low=timedelta(seconds=1), high=HUNDRED_YEARS)
    retain_done: bool = setting(
        True, "keep a job settled done until the retention; off: delete it as it settles")
    retain_payload: bool = setting(
        True, "keep a finished job's payload; off: clear it to null as the job finishes")


@dataclass(frozen=True, kw_only=True)
class HandlerSettings(TopicSettings):
    """What Worker.handler takes: the topic's settings, and ``timeout``, which bounds one
    attempt (None: no limit)."""

    timeout: timedelta | None = timedelta(minutes=1)  # not a topic's setting: no declaration


SETTINGS: tuple[Setting, ...] = settings_of(TopicSettings)
NAMES: tuple[str, ...] = tuple(s.name for s in SETTINGS)
_SQL_TYPES: dict[type, LiteralString] = {bool: "boolean", int: "integer", timedelta: "interval"}


def sql_type(s: Setting) -> LiteralString:
    """The setting's SQL type: integer, interval or boolean."""
    return _SQL_TYPES[s.kind]


def named_arguments() -> LiteralString:
    """`max_attempts => %(max_attempts)s::integer, ...`: every setting as a named argument
    of brooq.declare_topic or brooq.alter_topic, its value a named parameter."""
    # Made of the fields' names and _SQL_TYPES, never of input: literal in effect (mypy
    # reads LiteralString as str, so no cast is needed to say so).
    return ", ".join(f"{s.name} => %({s.name})s::{sql_type(s)}" for s in SETTINGS)


def parameters(settings: TopicSettings) -> dict[str, Any]:
    """The named parameters of named_arguments(): each setting's value."""
    return {name: getattr(settings, name) for name in NAMES}


@dataclass(frozen=True)
class Topic:
    """A topic as stored (the view brooq.topics; what declare_topic returns): its name,
    its settings, whether it is paused, when it was declared and last changed."""

    name: str
    settings: TopicSettings
    paused: bool
    created_at: datetime
    updated_at: datetime


# The columns of brooq.topics, and of the row declare_topic and alter_topic return,
# that a Topic is read from (topic_row).
COLUMNS: LiteralString = "name, " + ", ".join(NAMES) + ", paused, created_at, updated_at"


def topic_row(cursor: Any) -> Callable[[Sequence[Any]], Topic]:
    """A psycopg row factory: a Topic from a row of COLUMNS."""
    names = [c.name for c in cursor.description or ()]

    def make(values: Sequence[Any]) -> Topic:
        row = dict(zip(names, values, strict=True))
        return Topic(name=row["name"], settings=TopicSettings(**{n: row[n] for n in NAMES}),
                     paused=row["paused"], created_at=row["created_at"], updated_at=row["updated_at"])

    return make


def topic_settings(settings: TopicSettings) -> TopicSettings:
    """The topic settings of ``settings`` alone (of a subclass that adds fields, say
    Worker.handler's timeout)."""
    return settings if type(settings) is TopicSettings else TopicSettings(**parameters(settings))
