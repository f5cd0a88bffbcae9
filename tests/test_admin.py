"""brooq.admin and its brooq.aio twins: retry, retry_dead, pause_topic, resume_topic, flush,
alter_topic, schedule, unschedule, drop_topic, each a thin call of its SQL function, errors mapped."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Iterator
from datetime import timedelta
from typing import Any, TypeVar

import brooq
import psycopg
import pytest
from brooq import aio

T = TypeVar("T")
Conn = psycopg.Connection[Any]
AConn = psycopg.AsyncConnection[Any]

ADMIN_CALLS = ["alter_topic", "drop_topic", "flush", "pause_topic", "resume_topic", "retry", "retry_dead",
               "schedule", "unschedule"]


def run(db: str, body: Callable[[AConn], Awaitable[T]]) -> T:
    async def main() -> T:
        async with await psycopg.AsyncConnection.connect(db, autocommit=True) as conn:
            return await body(conn)
    return asyncio.run(main())


def dead_job(conn: Conn, topic: str) -> int:
    """A job of ``topic`` claimed and settled dead."""
    job = brooq.enqueue(conn, topic, {"n": 1}, priority=1000)  # claimed before any job waiting
    row = conn.execute("select id, lease_token from brooq.claim('admin-test:1', array[%s], 1)"
                       " where id = %s", [topic, job.id]).fetchone()
    assert row is not None
    conn.execute("select brooq.settle(%s, 'admin-test:1', %s, 'dead', error => 'HTTP 500')", row)
    return job.id


def state(conn: Conn, job_id: int) -> str | None:
    fate = brooq.get_job(conn, job_id)
    return None if fate is None else fate.state


def count(conn: Conn, topic: str) -> int:
    row = conn.execute("select count(*) from brooq.jobs where topic = %s", [topic]).fetchone()
    assert row is not None
    return int(row[0])


def test_every_admin_call_is_exported_sync_and_async() -> None:
    for name in ADMIN_CALLS:
        assert name in brooq.__all__ and name in aio.__all__
        assert inspect.iscoroutinefunction(inspect.unwrap(getattr(aio, name))), name
        assert not inspect.iscoroutinefunction(inspect.unwrap(getattr(brooq, name))), name
    assert list(inspect.signature(brooq.alter_topic).parameters) == list(
        inspect.signature(aio.alter_topic).parameters)


def test_retry_and_retry_dead(conn: Conn) -> None:
    brooq.declare_topic(conn, "hook", max_attempts=2)
    dead = dead_job(conn, "hook")
    assert brooq.retry(conn, dead) is True
    fate = brooq.get_job(conn, dead)
    assert fate is not None and (fate.state, fate.attempts, fate.max_attempts) == ("pending", 1, 3)
    assert fate.last_error is not None and fate.last_error.startswith("re-driven from dead by ")
    assert brooq.retry(conn, dead) is False  # pending: nothing to re-drive
    assert brooq.retry(conn, 10**12) is False  # unknown

    brooq.declare_topic(conn, "batch")
    first, second = dead_job(conn, "batch"), dead_job(conn, "batch")
    canceled = brooq.enqueue(conn, "batch", {}).id
    brooq.cancel(conn, canceled)
    assert brooq.retry_dead(conn, "batch", max_jobs=1) == 1
    assert brooq.retry_dead(conn, "batch") == 1
    assert brooq.retry_dead(conn, "batch") == 0
    assert (state(conn, first), state(conn, second), state(conn, canceled)) == ("pending", "pending", "canceled")
    assert brooq.retry_dead(conn, "batch", include_canceled=True) == 1
    assert state(conn, canceled) == "pending"
    with pytest.raises(brooq.UnknownTopic):
        brooq.retry_dead(conn, "nope")
    with pytest.raises(brooq.InvalidArgument) as raised:
        brooq.retry_dead(conn, "batch", max_jobs=0)
    assert raised.value.sqlstate == "22023"


def test_pause_and_resume_topic(conn: Conn) -> None:
    brooq.declare_topic(conn, "report")
    assert brooq.pause_topic(conn, "report") is True
    assert brooq.pause_topic(conn, "report") is False  # paused already
    job = brooq.enqueue(conn, "report", {})  # enqueue still takes jobs
    assert conn.execute("select count(*) from brooq.claim('admin-test:1', array['report'])").fetchone() == (0,)
    assert brooq.resume_topic(conn, "report") is True
    assert brooq.resume_topic(conn, "report") is False
    assert conn.execute("select id from brooq.claim('admin-test:1', array['report'])").fetchone() == (job.id,)
    with pytest.raises(brooq.UnknownTopic) as raised:
        brooq.pause_topic(conn, "reports")
    assert raised.value.sqlstate == "42704"


def test_flush(conn: Conn) -> None:
    brooq.declare_topic(conn, "bulk")
    brooq.enqueue_many(conn, "bulk", [{}, {}, {}])
    done = brooq.enqueue(conn, "bulk", {}).id
    brooq.cancel(conn, done)
    assert brooq.flush(conn, "bulk") == 3  # the waiting ones
    assert count(conn, "bulk") == 1
    assert brooq.flush(conn, "bulk", ("done", "dead", "canceled")) == 1
    assert brooq.flush(conn, "bulk") == 0
    brooq.enqueue(conn, "bulk", {})
    with pytest.raises(brooq.InvalidArgument, match="list of states"):
        brooq.flush(conn, "bulk", "pending")  # a str is not its letters
    with pytest.raises(brooq.InvalidArgument) as raised:
        brooq.flush(conn, "bulk", ["processing"])
    assert raised.value.sqlstate == "22023"
    with pytest.raises(brooq.UnknownTopic):
        brooq.flush(conn, "nope")
    assert count(conn, "bulk") == 1  # nothing deleted by a refused flush


def test_alter_topic_changes_only_what_it_names(conn: Conn) -> None:
    declared = brooq.declare_topic(conn, "audit", max_attempts=3, notify=False, rate=10,
                                   max_in_flight=2, retention=timedelta(days=2))
    brooq.pause_topic(conn, "audit")
    altered = brooq.alter_topic(conn, "audit", max_lease=timedelta(minutes=20))
    assert altered.settings == brooq.TopicSettings(**{
        **vars(declared.settings), "max_lease": timedelta(minutes=20)})
    assert altered.paused  # pausing is no setting: left as it is

    cleared = brooq.alter_topic(conn, "audit", clear=["rate", "max_in_flight"], max_attempts=4)
    assert cleared.settings == brooq.TopicSettings(**{
        **vars(altered.settings), "rate": None, "per": None, "max_in_flight": None, "max_attempts": 4})

    with pytest.raises(brooq.InvalidArgument, match=r"clear=\['rate'\]"):
        brooq.alter_topic(conn, "audit", rate=None)  # None is not "no limit" here: clear says so
    with pytest.raises(brooq.InvalidArgument, match="list of settings"):
        brooq.alter_topic(conn, "audit", clear="rate")
    with pytest.raises(TypeError):
        brooq.alter_topic(conn, "audit", retries=3)  # type: ignore[call-arg]
    with pytest.raises(brooq.InvalidArgument) as raised:
        brooq.alter_topic(conn, "audit", max_attempts=0)
    assert raised.value.sqlstate == "22023"
    with pytest.raises(brooq.InvalidArgument):
        brooq.alter_topic(conn, "audit", rate=5, clear=["rate"])
    with pytest.raises(brooq.UnknownTopic):
        brooq.alter_topic(conn, "audits", max_attempts=2)
    stored = conn.execute("select max_attempts, rate from brooq.topics where name = 'audit'").fetchone()
    assert stored == (4, None)  # the refused calls wrote nothing


def test_the_async_twins(db: str) -> None:
    async def body(conn: AConn) -> None:
        declared = await aio.declare_topic(conn, "hook", max_attempts=2, rate=5)
        altered = await aio.alter_topic(conn, "hook", backoff_max=timedelta(minutes=2))
        assert altered.settings == brooq.TopicSettings(**{
            **vars(declared.settings), "backoff_max": timedelta(minutes=2)})
        cleared = await aio.alter_topic(conn, "hook", clear=["rate"])
        assert (cleared.settings.rate, cleared.settings.per, cleared.settings.max_attempts) == (None, None, 2)

        assert await aio.pause_topic(conn, "hook") is True
        assert await aio.pause_topic(conn, "hook") is False
        assert await aio.resume_topic(conn, "hook") is True
        assert await aio.resume_topic(conn, "hook") is False

        job = await aio.enqueue(conn, "hook", {})
        await aio.cancel(conn, job.id)
        assert await aio.retry(conn, job.id) is True
        assert await aio.retry(conn, job.id) is False
        await aio.cancel(conn, job.id)
        assert await aio.retry_dead(conn, "hook") == 0  # canceled is not dead
        assert await aio.retry_dead(conn, "hook", include_canceled=True, max_jobs=5) == 1

        await aio.enqueue_many(conn, "hook", [{}, {}])
        assert await aio.flush(conn, "hook") == 3
        assert await aio.flush(conn, "hook", ["done", "dead", "canceled"]) == 0
        assert await aio.unschedule(conn, "no-such-schedule") is False

        with pytest.raises(brooq.UnknownTopic):
            await aio.pause_topic(conn, "nope")
        with pytest.raises(brooq.InvalidArgument):
            await aio.flush(conn, "hook", "done")
        with pytest.raises(brooq.InvalidArgument):
            await aio.alter_topic(conn, "hook", max_in_flight=None)
        with pytest.raises(brooq.InvalidArgument) as raised:
            await aio.retry_dead(conn, "hook", max_jobs=0)
        assert raised.value.sqlstate == "22023"

    run(db, body)


def test_a_sync_call_given_an_async_connection_names_its_twin(db: str) -> None:
    async def body(conn: AConn) -> None:
        with pytest.raises(TypeError, match=r"await aio\.retry_dead\(conn"):
            brooq.retry_dead(conn, "hook")  # type: ignore[arg-type]

    run(db, body)


@pytest.fixture
def producer_role(conn: Conn) -> Iterator[str]:
    """A role with brooq_producer only: no admin call is its to make."""
    conn.execute("drop role if exists brooq_test_admin_producer")
    conn.execute("create role brooq_test_admin_producer in role brooq_producer")
    try:
        yield "brooq_test_admin_producer"
    finally:
        conn.execute("drop role brooq_test_admin_producer")


SYNC_CALLS: dict[str, Callable[[Conn, int], object]] = {
    "alter_topic": lambda c, _: brooq.alter_topic(c, "guarded", max_attempts=2),
    "drop_topic": lambda c, _: brooq.drop_topic(c, "guarded", force=True),
    "flush": lambda c, _: brooq.flush(c, "guarded"),
    "pause_topic": lambda c, _: brooq.pause_topic(c, "guarded"),
    "resume_topic": lambda c, _: brooq.resume_topic(c, "guarded"),
    "retry": lambda c, job: brooq.retry(c, job),
    "retry_dead": lambda c, _: brooq.retry_dead(c, "guarded"),
    "schedule": lambda c, _: brooq.schedule(c, "guarded", "0 3 * * *", "guarded"),
    "unschedule": lambda c, _: brooq.unschedule(c, "guarded"),
}


def test_a_role_without_brooq_admin_is_refused_with_the_grant_to_run(conn: Conn, producer_role: str) -> None:
    assert sorted(SYNC_CALLS) == ADMIN_CALLS
    brooq.declare_topic(conn, "guarded")
    job = brooq.enqueue(conn, "guarded", {}).id
    brooq.cancel(conn, job)
    for name, call in SYNC_CALLS.items():
        with conn.transaction():
            conn.execute(f"set local role {producer_role}")
            with pytest.raises(brooq.PermissionDenied) as raised:
                call(conn, job)
            assert raised.value.sqlstate == "42501", name
            assert "grant brooq_admin to " in str(raised.value), name
            raise psycopg.Rollback()
    assert (state(conn, job), count(conn, "guarded")) == ("canceled", 1)


def test_the_async_twins_refuse_a_role_without_brooq_admin(db: str, producer_role: str) -> None:
    async def body(conn: AConn) -> None:
        await aio.declare_topic(conn, "guarded")
        calls: dict[str, Callable[[], Awaitable[object]]] = {
            "alter_topic": lambda: aio.alter_topic(conn, "guarded", max_attempts=2),
            "drop_topic": lambda: aio.drop_topic(conn, "guarded", force=True),
            "flush": lambda: aio.flush(conn, "guarded"),
            "pause_topic": lambda: aio.pause_topic(conn, "guarded"),
            "resume_topic": lambda: aio.resume_topic(conn, "guarded"),
            "retry": lambda: aio.retry(conn, 1),
            "retry_dead": lambda: aio.retry_dead(conn, "guarded"),
            "schedule": lambda: aio.schedule(conn, "guarded", "0 3 * * *", "guarded"),
            "unschedule": lambda: aio.unschedule(conn, "guarded"),
        }
        assert sorted(calls) == ADMIN_CALLS
        for name, call in calls.items():
            async with conn.transaction():
                await conn.execute(f"set local role {producer_role}")
                with pytest.raises(brooq.PermissionDenied, match="grant brooq_admin to ") as raised:
                    await call()
                assert raised.value.sqlstate == "42501", name
                raise psycopg.Rollback()

    run(db, body)


@pytest.fixture
def cron_dsn(tap_dsn: str) -> Iterator[str]:
    """The database where pg_cron lives (brooq deployed there); this file's schedules
    and jobs removed after."""
    with psycopg.connect(tap_dsn, autocommit=True) as conn:
        if conn.execute("select to_regnamespace('cron') is null").fetchone() == (True,):
            pytest.skip("pg_cron is not installed in the test database")
        brooq.declare_topic(conn, "admin.report")
        try:
            yield tap_dsn
        finally:
            for (name,) in conn.execute("select name from brooq.schedules where topic = 'admin.report'"
                                        ).fetchall():
                conn.execute("select brooq.unschedule(%s)", [name])
            conn.execute("delete from brooq.job where topic = 'admin.report'")


def test_schedule_and_unschedule(cron_dsn: str) -> None:
    with psycopg.connect(cron_dsn, autocommit=True) as conn:
        jobid = brooq.schedule(conn, "admin-nightly", "0 3 * * *", "admin.report", {"kind": "nightly"},
                               priority=3)
        again = brooq.schedule(conn, "admin-nightly", "0 4 * * *", "admin.report")  # updates, same id
        assert isinstance(jobid, int) and again == jobid
        assert conn.execute("select schedule, command from cron.job where jobid = %s", [jobid]).fetchone() == (
            "0 4 * * *", "select brooq._schedule_tick('admin-nightly')")
        assert conn.execute("select payload, priority from brooq.schedules where name = 'admin-nightly'"
                            ).fetchone() == ({}, 0)
        with pytest.raises(brooq.InvalidArgument):
            brooq.schedule(conn, "Admin Nightly", "0 3 * * *", "admin.report")
        with pytest.raises(brooq.UnknownTopic):
            brooq.schedule(conn, "admin-other", "0 3 * * *", "admin.reports")
        assert brooq.unschedule(conn, "admin-nightly") is True
        assert brooq.unschedule(conn, "admin-nightly") is False

    async def body(aconn: AConn) -> None:
        jobid = await aio.schedule(aconn, "admin-hourly", "0 * * * *", "admin.report", {"kind": "hourly"})
        assert isinstance(jobid, int)
        cur = await aconn.execute("select payload from brooq.schedules where name = 'admin-hourly'")
        assert await cur.fetchone() == ({"kind": "hourly"},)
        assert await aio.unschedule(aconn, "admin-hourly") is True
        assert await aio.unschedule(aconn, "admin-hourly") is False

    run(cron_dsn, body)


def test_schedule_ticked_by_the_workers_where_pg_cron_is_absent(conn: Conn, db: str) -> None:
    brooq.declare_topic(conn, "admin.tick")
    assert brooq.schedule(conn, "admin-seconds", "*/10 * * * * *", "admin.tick", {"n": 1}) is None
    with pytest.raises(brooq.PgCronMissing):
        brooq.schedule(conn, "admin-cron", "0 3 * * *", "admin.tick", ticker="pg_cron")
    with pytest.raises(brooq.InvalidArgument, match="2 fields"):
        brooq.schedule(conn, "admin-bad", "every tuesday", "admin.tick")
    assert conn.execute("select ticker, next_tick_at is not null from brooq.schedules where name = 'admin-seconds'"
                        ).fetchone() == ("workers", True)

    async def body(aconn: AConn) -> None:
        assert await aio.schedule(aconn, "admin-minute", "* * * * *", "admin.tick", ticker="workers") is None
        assert await aio.unschedule(aconn, "admin-minute") is True

    run(db, body)


def test_drop_topic(conn: Conn, db: str) -> None:
    brooq.declare_topic(conn, "emial")
    assert brooq.drop_topic(conn, "emial") == 0
    with pytest.raises(brooq.UnknownTopic, match='topic "emial" does not exist'):
        brooq.drop_topic(conn, "emial")
    brooq.declare_topic(conn, "retired")
    brooq.enqueue_many(conn, "retired", [{}, {}])
    with pytest.raises(brooq.TopicInUse, match='topic "retired" still has 2 jobs') as raised:
        brooq.drop_topic(conn, "retired")
    assert raised.value.sqlstate == "55006" and raised.value.hint is not None and "force" in raised.value.hint
    assert count(conn, "retired") == 2

    async def body(aconn: AConn) -> int:
        with pytest.raises(brooq.TopicInUse):
            await aio.drop_topic(aconn, "retired")
        return await aio.drop_topic(aconn, "retired", force=True)

    assert run(db, body) == 2
    assert count(conn, "retired") == 0
    assert conn.execute("select count(*) from brooq.topics where name in ('emial', 'retired')").fetchone() == (0,)


def test_the_reads_an_operator_makes(conn: Conn, db: str) -> None:
    """get_topic, count_jobs, list_schedules and health: what `brooq topic`, `brooq flush`'s
    confirmation, `brooq schedule --list` and `brooq health` print."""
    brooq.declare_topic(conn, "admin.read", max_attempts=7)
    assert brooq.get_topic(conn, "admin.nothing") is None
    topic = brooq.get_topic(conn, "admin.read")
    assert topic is not None and (topic.name, topic.settings.max_attempts, topic.paused) == ("admin.read", 7, False)

    brooq.enqueue_many(conn, "admin.read", [{}, {}, {}])
    dead_job(conn, "admin.read")
    assert brooq.count_jobs(conn, topic="admin.read") == 4
    assert brooq.count_jobs(conn, topic=["admin.read", "admin.nothing"], states=["pending"]) == 3
    assert brooq.count_jobs(conn, topic="admin.read", states=["dead", "done"]) == 1
    with pytest.raises(brooq.InvalidArgument, match="not the string 'dead'"):
        brooq.count_jobs(conn, states="dead")

    brooq.schedule(conn, "admin-read", "*/10 * * * * *", "admin.read", {"n": [1, 2]}, ticker="workers")
    mine = [s for s in brooq.list_schedules(conn) if s.name == "admin-read"]
    assert [(s.cron, s.ticker, s.topic, s.payload, s.last_job_id) for s in mine] == [
        ("*/10 * * * * *", "workers", "admin.read", {"n": [1, 2]}, None)]
    brooq.unschedule(conn, "admin-read")

    checks = brooq.health(conn)
    assert checks and all(c.status in ("ok", "warn", "fail") and c.detail for c in checks)

    async def body(aconn: AConn) -> tuple[Any, ...]:
        return (await aio.get_topic(aconn, "admin.read"), await aio.count_jobs(aconn, topic="admin.read"),
                await aio.list_schedules(aconn), [c.name for c in await aio.health(aconn)])

    got = run(db, body)
    assert (got[0], got[1], got[3]) == (topic, 4, [c.name for c in checks])
    assert "admin-read" not in [s.name for s in got[2]]
