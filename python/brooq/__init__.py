"""brooq: a job queue in PostgreSQL. The queue is SQL; this package is its reference worker.

Producer side, on your own psycopg connection and transaction::

    brooq.enqueue(conn, "email", {"to": "a@example.com"})

Worker side::

    worker = brooq.Worker("postgresql://...")

    @worker.handler("email")
    def send(job: brooq.Job) -> None: ...

    worker.run()

Typed tasks: the handler, its topic and its payload's type declared once::

    @brooq.task("email", max_attempts=5)
    def send(job: brooq.Job, mail: Email) -> None: ...

    send.enqueue(conn, Email(to="a@example.com"))   # checked against Email, then enqueued
    worker.register(send)

See docs/python-guide.md.
"""

from brooq import aio
from brooq._version import __version__
from brooq.admin import (
    alter_topic,
    drop_topic,
    flush,
    health,
    list_schedules,
    pause_topic,
    resume_topic,
    retry,
    retry_dead,
    schedule,
    unschedule,
)
from brooq.config import WorkerConfig, parse_duration
from brooq.durable import Emitted, Step, emit_event, emit_event_async, steps, steps_async
from brooq.errors import (
    BrooqError,
    ConfigError,
    ConnectError,
    InvalidArgument,
    KeyBusy,
    PayloadTooLarge,
    PermissionDenied,
    PgCronMissing,
    TopicInUse,
    UndecodableJob,
    UnknownTopic,
)
from brooq.job import Canceled, EventTimeout, Job, StepLeaseLost, StepsUnavailable, Suspended
from brooq.payload import Undecodable
from brooq.producer import (
    Enqueued,
    JobFate,
    cancel,
    children,
    count_jobs,
    declare_topic,
    enqueue,
    enqueue_many,
    get_job,
    get_topic,
    list_jobs,
    parents,
    topic_stats,
)
from brooq.rows import ChildJob, HealthCheck, ParentJob, ParentState, ScheduleStatus, TopicStats
from brooq.schema_check import SchemaMismatch, schema_version
from brooq.settings import Topic, TopicSettings
from brooq.signals import Cancel, Dead, HandlerSignal, PreserveAttempt, Retry
from brooq.snapshot import TopicSnapshot, WorkerSnapshot
from brooq.tasks import PayloadMismatch, Registry, Schedule, Task, periodic, task
from brooq.waiting import wait, wait_async
from brooq.worker import Worker

__all__ = [
    "BrooqError",
    "Cancel",
    "Canceled",
    "ChildJob",
    "ConfigError",
    "ConnectError",
    "Dead",
    "Emitted",
    "Enqueued",
    "EventTimeout",
    "HandlerSignal",
    "HealthCheck",
    "InvalidArgument",
    "Job",
    "JobFate",
    "KeyBusy",
    "ParentJob",
    "ParentState",
    "PayloadMismatch",
    "PayloadTooLarge",
    "PermissionDenied",
    "PgCronMissing",
    "PreserveAttempt",
    "Registry",
    "Retry",
    "Schedule",
    "ScheduleStatus",
    "SchemaMismatch",
    "Step",
    "StepLeaseLost",
    "StepsUnavailable",
    "Suspended",
    "Task",
    "Topic",
    "TopicInUse",
    "TopicSettings",
    "TopicSnapshot",
    "TopicStats",
    "Undecodable",
    "UndecodableJob",
    "UnknownTopic",
    "Worker",
    "WorkerConfig",
    "WorkerSnapshot",
    "__version__",
    "aio",
    "alter_topic",
    "cancel",
    "children",
    "count_jobs",
    "declare_topic",
    "drop_topic",
    "emit_event",
    "emit_event_async",
    "enqueue",
    "enqueue_many",
    "flush",
    "get_job",
    "get_topic",
    "health",
    "list_jobs",
    "list_schedules",
    "parents",
    "parse_duration",
    "pause_topic",
    "periodic",
    "resume_topic",
    "retry",
    "retry_dead",
    "schedule",
    "schema_version",
    "steps",
    "steps_async",
    "task",
    "topic_stats",
    "unschedule",
    "wait",
    "wait_async",
]
