"""brooq for SQLAlchemy's asyncio extension: an AsyncSession or AsyncConnection on the
psycopg driver (``create_async_engine("postgresql+psycopg_async://...")``), the job in
its transaction. The helpers are brooq.aio's, awaited, on the same connection."""

from __future__ import annotations

from typing import Any

import psycopg
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from brooq import calls, faces
from brooq.contrib.sqlalchemy import PSYCOPG, article, refuse

__all__ = ["alter_topic", "cancel", "children", "connection", "count_jobs", "declare_topic",
           "drop_topic", "enqueue", "enqueue_many", "flush", "get_job", "get_topic", "health",
           "list_jobs", "list_schedules", "parents", "pause_topic", "resume_topic", "retry",
           "retry_dead", "schedule", "topic_stats", "unschedule"]

AsyncBind = AsyncSession | AsyncConnection


async def connection(bind: AsyncBind) -> psycopg.AsyncConnection[Any]:
    """The psycopg AsyncConnection under an AsyncSession or AsyncConnection (the
    session's own, in its transaction, begun if none is). TypeError for an engine on
    another driver than psycopg 3."""
    if not isinstance(bind, AsyncSession | AsyncConnection):
        raise TypeError(f"brooq.contrib.sqlalchemy.aio takes an AsyncSession or an "
                        f"AsyncConnection, not {article(type(bind).__name__)}: for a Session or "
                        "Connection use brooq.contrib.sqlalchemy")
    dialect = (bind.get_bind() if isinstance(bind, AsyncSession) else bind).dialect
    if (dialect.name, dialect.driver) not in PSYCOPG or not dialect.is_async:  # before connecting
        raise refuse(f"{dialect.name}+{dialect.driver}", "brooq.contrib.sqlalchemy.aio",
                     "create_async_engine('postgresql+psycopg://...')")
    if isinstance(bind, AsyncSession):
        bind = await bind.connection()
    elif not bind.in_transaction():
        await bind.begin()  # as SQLAlchemy's autobegin, so that commit() and rollback() end it
    raw = (await bind.get_raw_connection()).driver_connection
    assert isinstance(raw, psycopg.AsyncConnection)  # the psycopg_async dialect's
    return raw


# Every call of brooq.aio, in the transaction of an AsyncSession or AsyncConnection.
enqueue = faces.via_async(connection, calls.enqueue, __name__)
enqueue_many = faces.via_async(connection, calls.enqueue_many, __name__)
get_job = faces.via_async(connection, calls.get_job, __name__)
parents = faces.via_async(connection, calls.parents, __name__)
children = faces.via_async(connection, calls.children, __name__)
list_jobs = faces.via_async(connection, calls.list_jobs, __name__)
count_jobs = faces.via_async(connection, calls.count_jobs, __name__)
topic_stats = faces.via_async(connection, calls.topic_stats, __name__)
get_topic = faces.via_async(connection, calls.get_topic, __name__)
declare_topic = faces.via_async(connection, calls.declare_topic, __name__)
alter_topic = faces.via_async(connection, calls.alter_topic, __name__)
pause_topic = faces.via_async(connection, calls.pause_topic, __name__)
resume_topic = faces.via_async(connection, calls.resume_topic, __name__)
cancel = faces.via_async(connection, calls.cancel, __name__)
retry = faces.via_async(connection, calls.retry, __name__)
retry_dead = faces.via_async(connection, calls.retry_dead, __name__)
flush = faces.via_async(connection, calls.flush, __name__)
schedule = faces.via_async(connection, calls.schedule, __name__)
unschedule = faces.via_async(connection, calls.unschedule, __name__)
list_schedules = faces.via_async(connection, calls.list_schedules, __name__)
drop_topic = faces.via_async(connection, calls.drop_topic, __name__)
health = faces.via_async(connection, calls.health, __name__)
