"""brooq.aio: the producer helpers on a psycopg.AsyncConnection, in the caller's transaction."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import brooq
import psycopg
import pytest
from brooq import aio

T = TypeVar("T")
AConn = psycopg.AsyncConnection[Any]


def run(db: str, body: Callable[[AConn], Awaitable[T]]) -> T:
    async def main() -> T:
        async with await psycopg.AsyncConnection.connect(db, autocommit=True) as conn:
            return await body(conn)
    return asyncio.run(main())


def test_enqueue_in_the_callers_transaction_and_read_the_fate(db: str) -> None:
    async def body(conn: AConn) -> None:
        await aio.declare_topic(conn, "email", max_attempts=3)
        await conn.execute("create table orders (id int)")
        async with conn.transaction():
            await conn.execute("insert into orders values (42)")
            job = await aio.enqueue(conn, "email", {"order": 42}, key="order-42", priority=5)
        assert job.created
        again = await aio.enqueue(conn, "email", {"order": 42}, key="order-42")
        assert again == brooq.Enqueued(job.id, False)
        with pytest.raises(ZeroDivisionError):
            async with conn.transaction():
                await aio.enqueue(conn, "email", {"order": 43})
                1 / 0  # noqa: B018 - rolls the enqueue back with the transaction
        fate = await aio.get_job(conn, job.id)
        assert fate is not None
        assert (fate.state, fate.payload, fate.key, fate.priority, fate.max_attempts) == (
            "pending", {"order": 42}, "order-42", 5, 3)
        many = await aio.enqueue_many(conn, "email", [{"n": 1}, {"n": 2}], keys=["a", None])
        assert [m.created for m in many] == [True, True] and many[0].id < many[1].id
        assert await aio.cancel(conn, many[0].id) is True
        assert await aio.cancel(conn, many[0].id) is False  # terminal now
        assert await aio.get_job(conn, 10**12) is None
        stats = {s.topic: s for s in await aio.topic_stats(conn)}
        assert stats["email"].pending == 2  # job and many[1]: the rolled-back one never was
    run(db, body)


def test_errors_are_mapped_as_in_the_sync_helpers(db: str) -> None:
    async def body(conn: AConn) -> None:
        with pytest.raises(brooq.UnknownTopic) as raised:
            await aio.enqueue(conn, "no-such-topic", {})
        assert raised.value.sqlstate == "42704"
        assert isinstance(raised.value.__cause__, psycopg.errors.UndefinedObject)
        with pytest.raises(brooq.InvalidArgument):
            await aio.declare_topic(conn, "Bad Name")
    run(db, body)


def test_a_sync_helper_given_an_async_connection_says_which_to_use(db: str) -> None:
    async def body(conn: AConn) -> None:
        with pytest.raises(TypeError, match=r"await aio\.enqueue\(conn"):
            brooq.enqueue(conn, "email", {})  # type: ignore[arg-type]
    run(db, body)
