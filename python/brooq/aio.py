"""The calls of brooq.producer and brooq.admin for asyncio: the same calls on a
psycopg.AsyncConnection (FastAPI and other asyncio applications)::

    from brooq import aio

    async with await psycopg.AsyncConnection.connect(dsn) as conn:
        async with conn.transaction():
            await conn.execute("insert into orders ...")
            job = await aio.enqueue(conn, "email", {"order": 42}, key="order-42")

Each one runs on the caller's connection, inside the caller's transaction, and maps
errors by SQLSTATE exactly as its sync twin does: both are faces of one declaration in
:mod:`brooq.calls` (the SQL, the parameters, the result, the errors).
"""

from __future__ import annotations

from brooq import calls, faces
from brooq.waiting import wait_async as wait

__all__ = ["alter_topic", "cancel", "children", "count_jobs", "declare_topic", "drop_topic",
           "enqueue", "enqueue_many", "flush", "get_job", "get_topic", "health", "list_jobs",
           "list_schedules", "parents", "pause_topic", "resume_topic", "retry", "retry_dead",
           "schedule", "topic_stats", "unschedule", "wait"]

enqueue = faces.awaited(calls.enqueue, __name__)
enqueue_many = faces.awaited(calls.enqueue_many, __name__)
get_job = faces.awaited(calls.get_job, __name__)
parents = faces.awaited(calls.parents, __name__)
children = faces.awaited(calls.children, __name__)
list_jobs = faces.awaited(calls.list_jobs, __name__)
count_jobs = faces.awaited(calls.count_jobs, __name__)
topic_stats = faces.awaited(calls.topic_stats, __name__)
get_topic = faces.awaited(calls.get_topic, __name__)
declare_topic = faces.awaited(calls.declare_topic, __name__)
alter_topic = faces.awaited(calls.alter_topic, __name__)
pause_topic = faces.awaited(calls.pause_topic, __name__)
resume_topic = faces.awaited(calls.resume_topic, __name__)
cancel = faces.awaited(calls.cancel, __name__)
retry = faces.awaited(calls.retry, __name__)
retry_dead = faces.awaited(calls.retry_dead, __name__)
flush = faces.awaited(calls.flush, __name__)
schedule = faces.awaited(calls.schedule, __name__)
unschedule = faces.awaited(calls.unschedule, __name__)
list_schedules = faces.awaited(calls.list_schedules, __name__)
drop_topic = faces.awaited(calls.drop_topic, __name__)
health = faces.awaited(calls.health, __name__)
