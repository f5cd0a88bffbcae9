"""brooq for SQLAlchemy's asyncio extension: an AsyncSession or AsyncConnection on the
psycopg driver (``create_async_engine("postgresql+psycopg_async://...")``), the job in
its transaction. The helpers are brooq.aio's, awaited, on the same connection."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any

import psycopg
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

import brooq
from brooq import aio
from brooq.contrib.sqlalchemy import PSYCOPG, refuse

__all__ = ["cancel", "connection", "declare_topic", "enqueue", "enqueue_many", "get_job"]

AsyncBind = AsyncSession | AsyncConnection


async def connection(bind: AsyncBind) -> psycopg.AsyncConnection[Any]:
    """The psycopg AsyncConnection under an AsyncSession or AsyncConnection (the
    session's own, in its transaction, begun if none is). TypeError for an engine on
    another driver than psycopg 3."""
    if not isinstance(bind, AsyncSession | AsyncConnection):
        raise TypeError(f"brooq.contrib.sqlalchemy.aio takes an AsyncSession or an "
                        f"AsyncConnection, not a {type(bind).__name__}: for a Session or "
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


async def enqueue(bind: AsyncBind, topic: str, payload: Any, *, key: str | None = None,
                  at: datetime | None = None, delay: timedelta | None = None, priority: int = 0,
                  group: str | None = None,
                  after: Sequence[int] | None = None, after_policy: str = "cancel") -> brooq.Enqueued:
    """brooq.aio.enqueue in the transaction of an AsyncSession or AsyncConnection."""
    return await aio.enqueue(await connection(bind), topic, payload, key=key, at=at, delay=delay,
                             priority=priority, group=group,
                             after=after, after_policy=after_policy)


async def enqueue_many(bind: AsyncBind, topic: str, payloads: Iterable[Any], *,
                       keys: Sequence[str | None] | None = None, at: datetime | None = None,
                       delay: timedelta | None = None, priority: int = 0,
                       groups: Sequence[str | None] | None = None) -> list[brooq.Enqueued]:
    """brooq.aio.enqueue_many in the transaction of an AsyncSession or AsyncConnection."""
    return await aio.enqueue_many(await connection(bind), topic, payloads, keys=keys, at=at,
                                  delay=delay, priority=priority, groups=groups)


async def cancel(bind: AsyncBind, job_id: int) -> bool:
    """brooq.aio.cancel in the transaction of an AsyncSession or AsyncConnection."""
    return await aio.cancel(await connection(bind), job_id)


async def get_job(bind: AsyncBind, job_id: int) -> brooq.JobFate | None:
    """brooq.aio.get_job on the connection of an AsyncSession or AsyncConnection."""
    return await aio.get_job(await connection(bind), job_id)


async def declare_topic(bind: AsyncBind, name: str, **settings: Any) -> brooq.Topic:
    """brooq.aio.declare_topic in the transaction of an AsyncSession or AsyncConnection."""
    return await aio.declare_topic(await connection(bind), name, **settings)
