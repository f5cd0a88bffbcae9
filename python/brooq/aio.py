"""The producer and admin helpers of brooq.producer and brooq.admin, for asyncio: the same calls on a
psycopg.AsyncConnection (FastAPI and other asyncio applications)::

    from brooq import aio

    async with await psycopg.AsyncConnection.connect(dsn) as conn:
        async with conn.transaction():
            await conn.execute("insert into orders ...")
            job = await aio.enqueue(conn, "email", {"order": 42}, key="order-42")

Each one runs on the caller's connection, inside the caller's transaction, and
maps errors by SQLSTATE exactly as its sync twin does; the SQL and the
parameters are the same ones (brooq.queries, brooq.producer's and brooq.admin's *_args).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any, LiteralString

import psycopg
from psycopg.rows import class_row, scalar_row

from brooq import queries, tracing
from brooq.admin import TopicChanges, alter_topic_params, schedule_args, states_arg, takes_changes
from brooq.errors import ADMIN, PRODUCER, WORKER, InvalidArgument, KeyBusy, mapped
from brooq.payload import guard_jsonb
from brooq.producer import (
    Enqueued,
    JobFate,
    after_args,
    busy_what,
    busy_what_batch,
    declare_topic_params,
    decoded,
    edge_args,
    enqueue_args,
    enqueue_many_args,
    key_busy,
    trace_arg,
)
from brooq.rows import ChildJob, ParentJob, TopicStats
from brooq.settings import Topic, TopicSettings, takes_settings, topic_row
from brooq.states import CLAIMABLE
from brooq.waiting import wait_async as wait

AsyncConn = psycopg.AsyncConnection[Any]

__all__ = ["alter_topic", "cancel", "declare_topic", "drop_topic", "enqueue", "enqueue_many", "flush", "get_job",
           "pause_topic", "resume_topic", "retry", "retry_dead", "schedule", "topic_stats",
           "unschedule", "wait"]


async def enqueue(conn: AsyncConn, topic: str, payload: Any, *, key: str | None = None,
                  at: datetime | None = None, delay: timedelta | None = None,
                  priority: int = 0, group: str | None = None,
                  after: Sequence[int] | None = None, after_policy: str = "cancel") -> Enqueued:
    """Enqueue one job in the caller's transaction; returns (id, created). See brooq.enqueue."""
    args = enqueue_args(topic, payload, key, at, delay, priority, group)
    parents = after_args(after, after_policy)
    query = queries.ENQUEUE if not parents else queries.ENQUEUE_AFTER

    async def call(trace_context: dict[str, str] | None) -> Enqueued:
        try:
            with mapped(PRODUCER, conn):
                cur = await conn.execute(query, [*args, trace_arg(trace_context), *parents])
                row = await cur.fetchone()
        except KeyBusy as exc:
            raise key_busy(exc, topic, busy_what(key, group)) from exc.__cause__
        assert row is not None  # brooq.enqueue returns exactly one row
        return Enqueued._make(row)

    return await tracing.send_async(topic, "enqueue", None, call)


async def enqueue_many(conn: AsyncConn, topic: str, payloads: Iterable[Any], *,
                       keys: Sequence[str | None] | None = None, at: datetime | None = None,
                       delay: timedelta | None = None, priority: int = 0,
                       groups: Sequence[str | None] | None = None,
                       after: Sequence[tuple[int, int]] | None = None,
                       after_policy: str = "cancel") -> list[Enqueued]:
    """Enqueue many jobs of one topic in one statement; results in input order
    (``after``: a workflow's edges, see brooq.enqueue_many)."""
    args = enqueue_many_args(topic, payloads, keys, at, delay, priority, groups)
    edges = edge_args(after, after_policy)
    query = queries.ENQUEUE_MANY if not edges else queries.ENQUEUE_MANY_AFTER

    async def call(trace_context: dict[str, str] | None) -> list[Enqueued]:
        try:
            with mapped(PRODUCER, conn):
                cur = await conn.execute(query, [*args, trace_arg(trace_context), *edges])
                rows = await cur.fetchall()
            return [Enqueued._make(row) for row in rows]
        except KeyBusy as exc:
            raise key_busy(exc, topic, busy_what_batch(groups)) from exc.__cause__

    return await tracing.send_async(topic, "enqueue_many", len(args[1]), call)


@takes_settings(TopicSettings)
async def declare_topic(conn: AsyncConn, name: str, settings: TopicSettings) -> Topic:
    """Create a topic or set all of its settings (idempotent; needs brooq_admin); returns
    the topic as stored. See brooq.declare_topic."""
    with mapped(ADMIN, conn):
        cur = conn.cursor(row_factory=topic_row)
        await cur.execute(queries.DECLARE_TOPIC, declare_topic_params(name, settings))
        topic = await cur.fetchone()
    assert topic is not None  # brooq.declare_topic returns one row
    return topic


async def cancel(conn: AsyncConn, job_id: int) -> bool:
    """Cancel a job that is not finished; False when it is terminal or unknown (needs brooq_admin)."""
    with mapped(ADMIN, conn):
        cur = conn.cursor(row_factory=scalar_row)
        await cur.execute(queries.CANCEL, [job_id])
        canceled = await cur.fetchone()
    return bool(canceled)


async def get_job(conn: AsyncConn, job_id: int) -> JobFate | None:
    """A job's fate in one SELECT, or None when no job has this id (never existed or purged);
    UndecodableJob as brooq.get_job."""
    if job_id is None:
        raise InvalidArgument("job_id must not be None")
    with mapped(PRODUCER, conn):
        cur = conn.cursor(row_factory=class_row(JobFate))
        guard_jsonb(cur)
        await cur.execute(queries.GET_JOB, [job_id])
        return decoded(await cur.fetchone())


async def parents(conn: AsyncConn, job_id: int) -> list[ParentJob]:
    """A job's parents with their states and results, in one query; see brooq.parents."""
    if job_id is None:
        raise InvalidArgument("job_id must not be None")
    with mapped(PRODUCER, conn):
        cur = conn.cursor(row_factory=class_row(ParentJob))
        guard_jsonb(cur)
        await cur.execute(queries.PARENTS, [job_id])
        return await cur.fetchall()


async def children(conn: AsyncConn, job_id: int, *, limit: int = 100) -> list[ChildJob]:
    """The jobs that wait (or waited) for a job; see brooq.children."""
    if job_id is None:
        raise InvalidArgument("job_id must not be None")
    if not 1 <= limit <= 10000:
        raise InvalidArgument(f"limit {limit} is not between 1 and 10000")
    with mapped(PRODUCER, conn):
        cur = conn.cursor(row_factory=class_row(ChildJob))
        await cur.execute(queries.CHILDREN, [job_id, limit])
        return await cur.fetchall()


async def topic_stats(conn: AsyncConn) -> list[TopicStats]:
    """Depth and lag of every topic (brooq.topic_stats), ordered by topic."""
    with mapped(WORKER, conn):
        cur = conn.cursor(row_factory=class_row(TopicStats))
        await cur.execute(queries.TOPIC_STATS)
        return await cur.fetchall()


# --- admin (brooq.admin's twins) ------------------------------------------------------

async def _scalar(conn: AsyncConn, query: LiteralString, params: Sequence[Any]) -> Any:
    """The one value of an admin call's one row, its errors mapped (a 42501 names brooq_admin)."""
    with mapped(ADMIN, conn):
        cur = conn.cursor(row_factory=scalar_row)
        await cur.execute(query, params)
        return await cur.fetchone()


@takes_changes(TopicChanges)
async def alter_topic(conn: AsyncConn, name: str, changes: dict[str, Any]) -> Topic:
    """Change only the settings named, of a declared topic (needs brooq_admin); returns the
    topic as stored. See brooq.alter_topic."""
    params = alter_topic_params(name, changes)
    with mapped(ADMIN, conn):
        cur = conn.cursor(row_factory=topic_row)
        await cur.execute(queries.ALTER_TOPIC, params)
        topic = await cur.fetchone()
    assert topic is not None  # brooq.alter_topic returns one row or raises
    return topic


async def pause_topic(conn: AsyncConn, name: str) -> bool:
    """Stop claims of the topic's jobs; False when it was paused already. See brooq.pause_topic."""
    return bool(await _scalar(conn, queries.PAUSE_TOPIC, [name]))


async def resume_topic(conn: AsyncConn, name: str) -> bool:
    """Let claims take the topic's jobs again; False when it was not paused."""
    return bool(await _scalar(conn, queries.RESUME_TOPIC, [name]))


async def retry(conn: AsyncConn, job_id: int, *, rearm_children: bool = False) -> bool:
    """Re-drive a dead or canceled job; False when it is in another state or unknown.
    See brooq.retry (``rearm_children``)."""
    return bool(await _scalar(conn, queries.RETRY, [job_id, rearm_children]))


async def retry_dead(conn: AsyncConn, topic: str, *, include_canceled: bool = False,
                     max_jobs: int = 1000, since: datetime | None = None,
                     rearm_children: bool = False) -> int:
    """Re-drive the topic's dead jobs; returns how many. See brooq.retry_dead."""
    return int(await _scalar(conn, queries.RETRY_DEAD,
                             [topic, include_canceled, max_jobs, since, rearm_children]) or 0)


async def flush(conn: AsyncConn, topic: str, states: Sequence[str] = CLAIMABLE) -> int:
    """Delete the topic's jobs in ``states``; returns how many. See brooq.flush."""
    return int(await _scalar(conn, queries.FLUSH, [topic, states_arg(states)]) or 0)


async def schedule(conn: AsyncConn, name: str, cron: str, topic: str, payload: Any = None, *,
                   priority: int = 0, ticker: str | None = None) -> int | None:
    """Register (or update) a periodic job; returns the pg_cron job id, None when the
    workers tick it. See brooq.schedule."""
    jobid = await _scalar(conn, queries.SCHEDULE, schedule_args(name, cron, topic, payload, priority, ticker))
    return None if jobid is None else int(jobid)


async def unschedule(conn: AsyncConn, name: str) -> bool:
    """Remove a schedule and its pg_cron job; False when no schedule has this name."""
    return bool(await _scalar(conn, queries.UNSCHEDULE, [name]))


async def drop_topic(conn: AsyncConn, name: str, *, force: bool = False) -> int:
    """Remove a topic; returns how many jobs were deleted with it. See brooq.drop_topic."""
    return int(await _scalar(conn, queries.DROP_TOPIC, [name, force]) or 0)
