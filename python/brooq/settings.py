"""A topic's settings, declared once: the fields of :class:`TopicSettings`.

Each field is one setting of brooq.declare_topic: its name (the SQL argument's),
its type (the SQL type follows from it: int is integer, timedelta interval, bool
boolean), its default (declare_topic's), its bounds and what it means. Everything
else is derived from these fields: the keyword arguments of brooq.declare_topic,
brooq.aio.declare_topic and Worker.handler (see :func:`takes_settings`), the SQL
statements that declare and alter a topic (brooq.queries), the options of
`brooq declare-topic` and `brooq alter-topic`, and their help. The database checks
every value (22023 out of range); the bounds here document those checks, and
tests/test_topic_settings.py holds them, the names and the defaults to the SQL.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from dataclasses import Field, dataclass, field, fields
from datetime import datetime, timedelta
from typing import Any, Concatenate, LiteralString, ParamSpec, TypeVar, get_type_hints

# PostgreSQL compares intervals as if a month were 30 days: '100 years' is 36000 days.
HUNDRED_YEARS = timedelta(days=36000)


def topic_setting(default: Any, doc: str, *, low: Any = None, high: Any = None) -> Any:
    """A field of TopicSettings: its default, what it means (one line: the options'
    help and the docs), and the range the database accepts (None: no bound of its own)."""
    return field(default=default, metadata={"doc": doc, "low": low, "high": high})


@dataclass(frozen=True, kw_only=True)
class TopicSettings:
    """The settings of a topic, as brooq.declare_topic takes them: the one place where a
    setting is declared. None, for the four settings that may be None: no limit."""

    max_attempts: int = topic_setting(
        5, "claims before a failure is final (dead); jobs keep the value they were enqueued with",
        low=1, high=1000)
    backoff_base: timedelta = topic_setting(
        timedelta(seconds=1), "the first retry's delay, doubled at each retry",
        low=timedelta(microseconds=1))
    backoff_max: timedelta = topic_setting(
        timedelta(minutes=1), "the longest retry delay (at least backoff_base)", high=HUNDRED_YEARS)
    retention: timedelta = topic_setting(
        timedelta(days=30), "how long finished jobs are kept before purge; 0s: forever",
        low=timedelta(0), high=HUNDRED_YEARS)
    max_payload_bytes: int = topic_setting(
        1 << 20, "the largest payload or result accepted (bytes of its JSON text)",
        low=1, high=268435455)
    notify: bool = topic_setting(True, "NOTIFY workers on enqueue; off: they poll")
    max_lease: timedelta = topic_setting(
        timedelta(hours=1), "the longest lease a claim may give and a heartbeat renew",
        low=timedelta(seconds=1), high=timedelta(days=7))
    max_lease_losses: int = topic_setting(
        5, "lease losses (reaps) in a row, with no outcome between, that make a job dead",
        low=1, high=1000)
    max_in_flight: int | None = topic_setting(
        None, "at most this many jobs of the topic processing at once, across all workers",
        low=1, high=1000000)
    rate: int | None = topic_setting(
        None, "at most this many jobs claimed in any window of per", low=1, high=1000000)
    per: timedelta | None = topic_setting(
        None, "the rate's window (1s when a rate is given without one)",
        low=timedelta(milliseconds=1), high=timedelta(days=1))
    max_execution: timedelta | None = topic_setting(
        None, "the longest a job may take across all its attempts, from its first claim",
        low=timedelta(seconds=1), high=HUNDRED_YEARS)
    retain_done: bool = topic_setting(
        True, "keep a job settled done until the retention; off: delete it as it settles")
    retain_payload: bool = topic_setting(
        True, "keep a finished job's payload; off: clear it to null as the job finishes")


@dataclass(frozen=True, kw_only=True)
class HandlerSettings(TopicSettings):
    """What Worker.handler takes: the topic's settings, and ``timeout``, which bounds one
    attempt (None: no limit)."""

    timeout: timedelta | None = timedelta(minutes=1)


SETTINGS: tuple[Field[Any], ...] = fields(TopicSettings)
NAMES: tuple[str, ...] = tuple(f.name for f in SETTINGS)
_HINTS = get_type_hints(TopicSettings)
_SQL_TYPES: dict[type, LiteralString] = {bool: "boolean", int: "integer", timedelta: "interval"}


def kind(f: Field[Any]) -> type:
    """A setting's Python type without None: int, timedelta or bool."""
    hint = _HINTS[f.name]
    kinds: tuple[type, ...] = getattr(hint, "__args__", (hint,))
    return next(t for t in kinds if t is not type(None))


def nullable(f: Field[Any]) -> bool:
    """Whether None is a value of the setting (no limit)."""
    return type(None) in getattr(_HINTS[f.name], "__args__", ())


def sql_type(f: Field[Any]) -> LiteralString:
    """The setting's SQL type: integer, interval or boolean."""
    return _SQL_TYPES[kind(f)]


def named_arguments() -> LiteralString:
    """`max_attempts => %(max_attempts)s::integer, ...`: every setting as a named argument
    of brooq.declare_topic or brooq.alter_topic, its value a named parameter."""
    # Made of the fields' names and _SQL_TYPES, never of input: literal in effect (mypy
    # reads LiteralString as str, so no cast is needed to say so).
    return ", ".join(f"{f.name} => %({f.name})s::{sql_type(f)}" for f in SETTINGS)


def parameters(settings: TopicSettings) -> dict[str, Any]:
    """The named parameters of named_arguments(): each setting's value."""
    return {name: getattr(settings, name) for name in NAMES}


P = ParamSpec("P")
S = TypeVar("S")
R = TypeVar("R")


def takes_settings(
        cls: Callable[P, TopicSettings],
) -> Callable[[Callable[[S, str, Any], R]], Callable[Concatenate[S, str, P], R]]:
    """Give a function ``fn(first, name, settings)`` the keyword arguments of ``cls``
    (TopicSettings or a subclass): ``fn(first, name, max_attempts=3)`` calls it with
    ``cls(max_attempts=3)``. Type checkers and help() see every setting, its type and
    default, from the one declaration."""

    def decorate(fn: Callable[[S, str, Any], R]) -> Callable[Concatenate[S, str, P], R]:
        @functools.wraps(fn)
        def with_keywords(first: S, name: str, /, *args: P.args, **kwargs: P.kwargs) -> R:
            return fn(first, name, cls(*args, **kwargs))

        own = list(inspect.signature(fn).parameters.values())[:2]
        setattr(with_keywords, "__signature__", inspect.signature(fn).replace(  # noqa: B010
            parameters=[*own, *inspect.signature(cls).parameters.values()]))
        return with_keywords

    return decorate


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
