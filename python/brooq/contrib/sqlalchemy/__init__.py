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

from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any

import psycopg
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session

import brooq

__all__ = ["cancel", "connection", "declare_topic", "enqueue", "enqueue_many", "get_job"]

Bind = Session | Connection
# The psycopg dialect, sync (postgresql+psycopg) or async (its driver is "psycopg" from a
# create_async_engine("postgresql+psycopg://..."), "psycopg_async" when the URL says so)
PSYCOPG = {("postgresql", "psycopg"), ("postgresql", "psycopg_async")}


def refuse(driver: str, module: str, engine: str) -> TypeError:
    """The error for an engine whose driver is not psycopg 3 (shared with .aio)."""
    return TypeError(f"{module} needs the psycopg (3) driver, {engine}; "
                     f"this engine uses {driver[:60]}")


def connection(bind: Bind) -> psycopg.Connection[Any]:
    """The psycopg connection under a Session or a Connection (the Session's own, in
    its transaction, begun if none is), so that any brooq helper runs in it. TypeError
    for an engine on another driver than psycopg 3, or an async one."""
    if not isinstance(bind, Session | Connection):
        raise TypeError(f"brooq.contrib.sqlalchemy takes a Session or a Connection, not a "
                        f"{type(bind).__name__}: for an AsyncSession or AsyncConnection use "
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


def enqueue(bind: Bind, topic: str, payload: Any, *, key: str | None = None,
            at: datetime | None = None, delay: timedelta | None = None, priority: int = 0,
            group: str | None = None,
            after: Sequence[int] | None = None, after_policy: str = "cancel") -> brooq.Enqueued:
    """brooq.enqueue in the transaction of a Session or Connection."""
    return brooq.enqueue(connection(bind), topic, payload, key=key, at=at, delay=delay,
                         priority=priority, group=group,
                         after=after, after_policy=after_policy)


def enqueue_many(bind: Bind, topic: str, payloads: Iterable[Any], *,
                 keys: Sequence[str | None] | None = None, at: datetime | None = None,
                 delay: timedelta | None = None, priority: int = 0,
                 groups: Sequence[str | None] | None = None) -> list[brooq.Enqueued]:
    """brooq.enqueue_many in the transaction of a Session or Connection."""
    return brooq.enqueue_many(connection(bind), topic, payloads, keys=keys, at=at, delay=delay,
                              priority=priority, groups=groups)


def cancel(bind: Bind, job_id: int) -> bool:
    """brooq.cancel in the transaction of a Session or Connection (needs brooq_admin)."""
    return brooq.cancel(connection(bind), job_id)


def get_job(bind: Bind, job_id: int) -> brooq.JobFate | None:
    """brooq.get_job on the connection of a Session or Connection."""
    return brooq.get_job(connection(bind), job_id)


def declare_topic(bind: Bind, name: str, **settings: Any) -> brooq.Topic:
    """brooq.declare_topic in the transaction of a Session or Connection (needs
    brooq_admin); ``settings`` are the fields of brooq.TopicSettings."""
    return brooq.declare_topic(connection(bind), name, **settings)
