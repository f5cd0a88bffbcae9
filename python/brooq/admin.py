"""The calls an admin runs (brooq_admin) on a psycopg connection: declare, alter, pause and
resume a topic, cancel a job, re-drive dead jobs, flush a topic's jobs, schedule periodic
jobs, drop a topic; and two reads an operator makes (brooq_worker is enough): the
schedules (list_schedules) and what needs a person (health).

Like brooq.producer's, each runs on the caller's psycopg connection, inside the caller's
transaction, and maps errors by SQLSTATE to :mod:`brooq.errors` (a 42501 names
brooq_admin). Each is the face of its declaration in :mod:`brooq.calls`; brooq.aio has
the same calls for asyncio. docs/sql-api.md has each function's rules and errors.
"""

from __future__ import annotations

from brooq import calls, faces
from brooq.calls import TopicChanges

__all__ = ["TopicChanges", "alter_topic", "cancel", "declare_topic", "declare_topic_settings",
           "drop_topic", "flush", "health", "list_schedules", "pause_topic", "resume_topic", "retry",
           "retry_dead", "schedule", "unschedule"]

declare_topic = faces.sync(calls.declare_topic, __name__)
declare_topic_settings = faces.sync(calls.declare_topic_settings, __name__)
alter_topic = faces.sync(calls.alter_topic, __name__)
pause_topic = faces.sync(calls.pause_topic, __name__)
resume_topic = faces.sync(calls.resume_topic, __name__)
cancel = faces.sync(calls.cancel, __name__)
retry = faces.sync(calls.retry, __name__)
retry_dead = faces.sync(calls.retry_dead, __name__)
flush = faces.sync(calls.flush, __name__)
schedule = faces.sync(calls.schedule, __name__)
unschedule = faces.sync(calls.unschedule, __name__)
list_schedules = faces.sync(calls.list_schedules, __name__)
drop_topic = faces.sync(calls.drop_topic, __name__)
health = faces.sync(calls.health, __name__)
