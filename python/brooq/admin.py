"""Admin helpers: thin calls of the brooq SQL functions an admin runs (brooq_admin).

Re-drive dead jobs, pause and resume a topic, flush its jobs, change some of its
settings, schedule periodic jobs. Like brooq.producer's helpers, each runs on the
caller's psycopg connection, inside the caller's transaction, and maps errors by
SQLSTATE to :mod:`brooq.errors` (a 42501 names brooq_admin); brooq.aio has their
async twins, on the same SQL and parameters. docs/sql-api.md has each function's
rules and errors.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Concatenate, ParamSpec, TypeVar

import psycopg
from psycopg.rows import scalar_row

from brooq import queries, settings
from brooq.errors import ADMIN, InvalidArgument, mapped
from brooq.payload import jsonb
from brooq.producer import _sync
from brooq.settings import Topic, TopicSettings, topic_row
from brooq.states import CLAIMABLE

Conn = psycopg.Connection[Any]


@dataclass(frozen=True, kw_only=True)
class TopicChanges(TopicSettings):
    """What alter_topic takes: any of the settings (only those named change), and
    ``clear``, the settings whose None means no limit to set back to none."""

    clear: Sequence[str] = ()


P = ParamSpec("P")
S = TypeVar("S")
R = TypeVar("R")


def takes_changes(
        cls: Callable[P, TopicSettings],
) -> Callable[[Callable[[S, str, dict[str, Any]], R]], Callable[Concatenate[S, str, P], R]]:
    """Give ``fn(first, name, changes)`` the keyword arguments of ``cls`` (TopicChanges),
    and pass it only those named: ``fn(first, name, max_lease=...)`` calls it with
    ``{"max_lease": ...}``. help() shows each setting with the default None (left as
    it is)."""

    def decorate(fn: Callable[[S, str, dict[str, Any]], R]) -> Callable[Concatenate[S, str, P], R]:
        @functools.wraps(fn)
        def with_keywords(first: S, name: str, /, *args: P.args, **kwargs: P.kwargs) -> R:
            cls(*args, **kwargs)  # a TypeError for a name that is no setting, or a positional
            return fn(first, name, dict(kwargs))

        own = list(inspect.signature(fn).parameters.values())[:2]
        keywords = [p.replace(default=None if p.name in settings.NAMES else p.default)
                    for p in inspect.signature(cls).parameters.values()]
        setattr(with_keywords, "__signature__", inspect.signature(fn).replace(  # noqa: B010
            parameters=[*own, *keywords]))
        return with_keywords

    return decorate


def alter_topic_params(name: str, changes: dict[str, Any]) -> dict[str, Any]:
    """The parameters of queries.ALTER_TOPIC: the settings named in ``changes``, every
    other one NULL (left as it is); shared with brooq.aio."""
    clear = changes.pop("clear", ())
    if isinstance(clear, str):
        raise InvalidArgument(f"clear must be a list of settings, not the string {clear[:200]!r}")
    for setting, value in changes.items():
        if value is None:
            raise InvalidArgument(f"{setting} of topic {name[:200]!r} is None: to set it to none "
                                  f"(no limit), name it in clear: clear=[{setting!r}]")
    return {"name": name, **{n: changes.get(n) for n in settings.NAMES}, "clear": list(clear)}


def states_arg(states: Sequence[str]) -> list[str]:
    """The states parameter of queries.FLUSH (a str would be read as its letters)."""
    if isinstance(states, str):
        raise InvalidArgument(f"states must be a list of states, not the string {states[:200]!r}")
    return list(states)


@takes_changes(TopicChanges)
def alter_topic(conn: Conn, name: str, changes: dict[str, Any]) -> Topic:
    """Change only the settings named, of a declared topic; every other setting, and
    whether it is paused, stays (brooq.alter_topic; needs brooq_admin). Returns the
    topic as stored. The keyword arguments are the settings of brooq.TopicSettings,
    checked as declare_topic checks them, and ``clear``: the settings whose None means
    no limit (max_in_flight, rate, per, max_execution) to set back to none::

        brooq.alter_topic(conn, "report", max_lease=timedelta(minutes=20))
        brooq.alter_topic(conn, "audit", clear=["rate", "max_in_flight"])
    """
    _sync(conn, "alter_topic")
    params = alter_topic_params(name, changes)
    with mapped(ADMIN, conn):
        topic = conn.cursor(row_factory=topic_row).execute(queries.ALTER_TOPIC, params).fetchone()
    assert topic is not None  # brooq.alter_topic returns one row or raises
    return topic


def pause_topic(conn: Conn, name: str) -> bool:
    """Stop claims of the topic's jobs (enqueue still takes them, jobs in flight settle);
    False when it was paused already (needs brooq_admin)."""
    _sync(conn, "pause_topic")
    with mapped(ADMIN, conn):
        return bool(conn.cursor(row_factory=scalar_row).execute(queries.PAUSE_TOPIC, [name]).fetchone())


def resume_topic(conn: Conn, name: str) -> bool:
    """Let claims take the topic's jobs again; False when it was not paused (needs brooq_admin)."""
    _sync(conn, "resume_topic")
    with mapped(ADMIN, conn):
        return bool(conn.cursor(row_factory=scalar_row).execute(queries.RESUME_TOPIC, [name]).fetchone())


def retry(conn: Conn, job_id: int, *, rearm_children: bool = False) -> bool:
    """Re-drive a dead or canceled job back to pending, with a fresh budget of attempts;
    False when it is in another state or unknown (needs brooq_admin). Workflows:
    ``rearm_children`` makes the children its end canceled wait for it again (and their
    descendants canceled with them); by default they stay canceled."""
    _sync(conn, "retry")
    with mapped(ADMIN, conn):
        return bool(conn.cursor(row_factory=scalar_row).execute(queries.RETRY, [job_id, rearm_children]).fetchone())


def retry_dead(conn: Conn, topic: str, *, include_canceled: bool = False, max_jobs: int = 1000,
               since: datetime | None = None, rearm_children: bool = False) -> int:
    """Re-drive the topic's dead jobs (and its canceled ones with ``include_canceled``),
    oldest first, those that became terminal at or after ``since`` when given, at most
    ``max_jobs`` (1 to 100000); returns how many. Jobs another transaction holds are
    skipped: call it again until it returns 0 (needs brooq_admin). ``rearm_children``:
    as in retry, for each job re-driven."""
    _sync(conn, "retry_dead")
    with mapped(ADMIN, conn):
        count = conn.cursor(row_factory=scalar_row).execute(
            queries.RETRY_DEAD, [topic, include_canceled, max_jobs, since, rearm_children]).fetchone()
    return int(count or 0)


def flush(conn: Conn, topic: str, states: Sequence[str] = CLAIMABLE) -> int:
    """Delete the topic's jobs in ``states`` at once, whatever their age; returns how many.
    By default the ones not yet run (pending, failed); ("done", "dead", "canceled") flushes the
    completed ones. Never a processing job (cancel it first). Needs brooq_admin."""
    _sync(conn, "flush")
    with mapped(ADMIN, conn):
        count = conn.cursor(row_factory=scalar_row).execute(
            queries.FLUSH, [topic, states_arg(states)]).fetchone()
    return int(count or 0)


def schedule(conn: Conn, name: str, cron: str, topic: str, payload: Any = None, *,
             priority: int = 0, ticker: str | None = None) -> int | None:
    """Register (or update, by name) a periodic job: each tick of ``cron`` enqueues one
    job of ``topic`` with ``payload`` ({} when None) and ``priority``, exactly one per
    tick. ``ticker``: "pg_cron", "workers", or None: pg_cron where it is installed in
    the database and can run the schedule, else the workers. Returns the pg_cron job
    id, None when the workers tick it; PgCronMissing for "pg_cron" without pg_cron
    (needs brooq_admin)."""
    _sync(conn, "schedule")
    with mapped(ADMIN, conn):
        jobid = conn.cursor(row_factory=scalar_row).execute(
            queries.SCHEDULE, schedule_args(name, cron, topic, payload, priority, ticker)).fetchone()
    return None if jobid is None else int(jobid)


def schedule_args(name: str, cron: str, topic: str, payload: Any, priority: int,
                  ticker: str | None) -> list[Any]:
    """The parameters of queries.SCHEDULE (shared with brooq.aio)."""
    return [name, cron, topic, jsonb({} if payload is None else payload), priority, ticker]


def unschedule(conn: Conn, name: str) -> bool:
    """Remove a schedule and its pg_cron job; False when no schedule has this name (needs
    brooq_admin)."""
    _sync(conn, "unschedule")
    with mapped(ADMIN, conn):
        return bool(conn.cursor(row_factory=scalar_row).execute(queries.UNSCHEDULE, [name]).fetchone())


def drop_topic(conn: Conn, name: str, *, force: bool = False) -> int:
    """Remove a topic and what is kept for it; returns how many jobs were deleted with it.
    Without ``force``, TopicInUse while it still has jobs or schedules; with it, they go
    too. UnknownTopic when there is no such topic (needs brooq_admin)."""
    _sync(conn, "drop_topic")
    with mapped(ADMIN, conn):
        count = conn.cursor(row_factory=scalar_row).execute(queries.DROP_TOPIC, [name, force]).fetchone()
    return int(count or 0)
