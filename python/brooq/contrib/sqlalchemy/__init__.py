"""brooq for SQLAlchemy: jobs enqueued with a Session or a Connection, in its transaction.

The engine must use the psycopg (3) driver: ``create_engine("postgresql+psycopg://...")``.
Every helper takes a ``Session`` or a ``Connection`` where brooq's take a psycopg
connection, and runs on the same database connection, inside the transaction that is
open there (the Session's, begun if it was not yet): ``session.commit()`` commits your
rows and the job together, ``session.rollback()`` drops both::

    with Session(engine) as session, session.begin():
        session.add(Order(id=42, email="ann@example.com"))
        brooq.contrib.sqlalchemy.enqueue(session, "email", {"order": 42})

:mod:`brooq.contrib.sqlalchemy.aio` has the same for an AsyncSession or an
AsyncConnection (``postgresql+psycopg_async://``). See docs/sqlalchemy.md.
"""

from __future__ import annotations

from typing import Any

import psycopg
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session

from brooq import calls, faces

__all__ = ["alter_topic", "cancel", "children", "connection", "count_jobs", "declare_topic",
           "drop_topic", "enqueue", "enqueue_many", "flush", "get_job", "get_topic", "health",
           "list_jobs", "list_schedules", "parents", "pause_topic", "resume_topic", "retry",
           "retry_dead", "schedule", "topic_stats", "unschedule"]

Bind = Session | Connection
# The psycopg dialect, sync (postgresql+psycopg) or async (its driver is "psycopg" from a
# create_async_engine("postgresql+psycopg://..."), "psycopg_async" when the URL says so)
PSYCOPG = {("postgresql", "psycopg"), ("postgresql", "psycopg_async")}


def article(noun: str) -> str:
    """``a Session``, ``an AsyncSession``: the noun with its English article."""
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


def refuse(driver: str, module: str, engine: str) -> TypeError:
    """The error for an engine whose driver is not psycopg 3 (shared with .aio)."""
    return TypeError(f"{module} needs the psycopg (3) driver, {engine}; "
                     f"this engine uses {driver[:60]}")


def connection(bind: Bind) -> psycopg.Connection[Any]:
    """The psycopg connection under a Session or a Connection (the Session's own, in
    its transaction, begun if none is), so that any brooq helper runs in it. TypeError
    for an engine on another driver than psycopg 3, or an async one."""
    if not isinstance(bind, Session | Connection):
        raise TypeError(f"brooq.contrib.sqlalchemy takes a Session or a Connection, not "
                        f"{article(type(bind).__name__)}: for an AsyncSession or AsyncConnection use "
                        "brooq.contrib.sqlalchemy.aio")
    dialect = (bind.get_bind() if isinstance(bind, Session) else bind).dialect
    if (dialect.name, dialect.driver) not in PSYCOPG or dialect.is_async:  # before connecting
        raise refuse(f"{dialect.name}+{dialect.driver}", "brooq.contrib.sqlalchemy",
                     "create_engine('postgresql+psycopg://...')")
    if isinstance(bind, Session):
        bind = bind.connection()
    elif not bind.in_transaction():
        # Begun as a statement of SQLAlchemy's would (autobegin), so that the Connection's
        # commit() and rollback() end it: they do nothing outside a transaction they know.
        bind.begin()
    raw = bind.connection.driver_connection
    assert isinstance(raw, psycopg.Connection)  # the psycopg dialect's
    return raw


# Every call of brooq, in the transaction of a Session or Connection: the face of its
# declaration in brooq.calls, its first parameter connection()'s.
enqueue = faces.via(connection, calls.enqueue, __name__)
enqueue_many = faces.via(connection, calls.enqueue_many, __name__)
get_job = faces.via(connection, calls.get_job, __name__)
parents = faces.via(connection, calls.parents, __name__)
children = faces.via(connection, calls.children, __name__)
list_jobs = faces.via(connection, calls.list_jobs, __name__)
count_jobs = faces.via(connection, calls.count_jobs, __name__)
topic_stats = faces.via(connection, calls.topic_stats, __name__)
get_topic = faces.via(connection, calls.get_topic, __name__)
declare_topic = faces.via(connection, calls.declare_topic, __name__)
alter_topic = faces.via(connection, calls.alter_topic, __name__)
pause_topic = faces.via(connection, calls.pause_topic, __name__)
resume_topic = faces.via(connection, calls.resume_topic, __name__)
cancel = faces.via(connection, calls.cancel, __name__)
retry = faces.via(connection, calls.retry, __name__)
retry_dead = faces.via(connection, calls.retry_dead, __name__)
flush = faces.via(connection, calls.flush, __name__)
schedule = faces.via(connection, calls.schedule, __name__)
unschedule = faces.via(connection, calls.unschedule, __name__)
list_schedules = faces.via(connection, calls.list_schedules, __name__)
drop_topic = faces.via(connection, calls.drop_topic, __name__)
health = faces.via(connection, calls.health, __name__)
