"""The producer and admin helpers of brooq.producer, for asyncio: the same calls on a
psycopg.AsyncConnection (FastAPI and other asyncio applications)::

    from brooq import aio

    async with await psycopg.AsyncConnection.connect(dsn) as conn:
        async with conn.transaction():
            await conn.execute("insert into orders ...")
            job = await aio.enqueue(conn, "email", {"order": 42}, key="order-42")

Each one runs on the caller's connection, inside the caller's transaction, and
maps errors by SQLSTATE exactly as its sync twin does; the SQL and the
parameters are the same ones (brooq.queries, brooq.producer's *_args).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any

import psycopg
from psycopg.rows import class_row, scalar_row

from brooq import queries, tracing
from brooq.errors import ADMIN, PRODUCER, WORKER, InvalidArgument, KeyBusy, mapped
from brooq.payload import guard_jsonb
from brooq.producer import (
    Enqueued,
    JobFate,
    busy_what,
    busy_what_batch,
    declare_topic_params,
    decoded,
    enqueue_args,
    enqueue_many_args,
    key_busy,
    trace_arg,
)
from brooq.rows import TopicStats
from brooq.settings import Topic, TopicSettings, takes_settings, topic_row
from brooq.waiting import wait_async as wait

AsyncConn = psycopg.AsyncConnection[Any]

__all__ = ["cancel", "declare_topic", "enqueue", "enqueue_many", "get_job", "topic_stats", "wait"]


async def enqueue(conn: AsyncConn, topic: str, payload: Any, *, key: str | None = None,
                  at: datetime | None = None, delay: timedelta | None = None,
                  priority: int = 0, group: str | None = None) -> Enqueued:
    """Enqueue one job in the caller's transaction; returns (id, created). See brooq.enqueue."""
    args = enqueue_args(topic, payload, key, at, delay, priority, group)

    async def call(trace_context: dict[str, str] | None) -> Enqueued:
        try:
            with mapped(PRODUCER, conn):
                cur = await conn.execute(queries.ENQUEUE, [*args, trace_arg(trace_context)])
                row = await cur.fetchone()
        except KeyBusy as exc:
            raise key_busy(topic, busy_what(key, group)) from exc.__cause__
        assert row is not None  # brooq.enqueue returns exactly one row
        return Enqueued._make(row)

    return await tracing.send_async(topic, "enqueue", None, call)


async def enqueue_many(conn: AsyncConn, topic: str, payloads: Iterable[Any], *,
                       keys: Sequence[str | None] | None = None, at: datetime | None = None,
                       delay: timedelta | None = None, priority: int = 0,
                       groups: Sequence[str | None] | None = None) -> list[Enqueued]:
    """Enqueue many jobs of one topic in one statement; results in input order."""
    args = enqueue_many_args(topic, payloads, keys, at, delay, priority, groups)

    async def call(trace_context: dict[str, str] | None) -> list[Enqueued]:
        try:
            with mapped(PRODUCER, conn):
                cur = await conn.execute(queries.ENQUEUE_MANY, [*args, trace_arg(trace_context)])
                rows = await cur.fetchall()
            return [Enqueued._make(row) for row in rows]
        except KeyBusy as exc:
            raise key_busy(topic, busy_what_batch(groups)) from exc.__cause__

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


async def topic_stats(conn: AsyncConn) -> list[TopicStats]:
    """Depth and lag of every topic (brooq.topic_stats), ordered by topic."""
    with mapped(WORKER, conn):
        cur = conn.cursor(row_factory=class_row(TopicStats))
        await cur.execute(queries.TOPIC_STATS)
        return await cur.fetchall()
