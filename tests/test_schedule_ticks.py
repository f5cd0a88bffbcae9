"""Schedules ticked by the workers (brooq.tick_schedules, brooq.ticker): several real
`brooq worker` processes tick one every-second schedule, one of them is killed (kill -9)
in the middle of a tick, and every tick still gets exactly one job. A producer holding
a tick's old idempotency key in an open transaction slows neither a worker's claims nor
the tick, and neither tick (the workers' or pg_cron's) waits for it; a lock only an
admin can hold makes a tick wait at most half a second."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import brooq
import psycopg
import pytest
from helpers import wait_for
from psycopg import sql

APP = Path(__file__).with_name("worker_app.py")
Conn = psycopg.Connection[tuple[Any, ...]]


def old_key(name: str, tick: datetime) -> str:
    """The idempotency key a tick's job had before ticks carried none: the one a producer
    could hold or squat (schedule names are visible in brooq.schedules' topics' jobs)."""
    return f"schedule:{name}:{tick.astimezone(UTC).strftime('%Y-%m-%dT%H:%M:%SZ')}"


def schedule_jobs(conn: Conn, topic: str, payload: str) -> list[tuple[int, datetime]]:
    """(id, created_at) of the jobs the schedule enqueued (its topic and payload), oldest first
    (ids come from each session's cache of the sequence: they do not tell the order)."""
    return [(i, at) for i, at in conn.execute(
        "select id, created_at from brooq.job where topic = %s and payload = %s::jsonb order by created_at, id",
        [topic, payload]).fetchall()]


def schedule_row(conn: Conn, name: str) -> tuple[Any, ...]:
    row = conn.execute("select next_tick_at, last_tick_at, last_job_id, last_error from brooq.schedules"
                       " where name = %s", [name]).fetchone()
    assert row is not None, name
    return row


def start_workers(dsn: str, tmp_path: Path, names: list[str]) -> dict[str, subprocess.Popen[str]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BROOQ_")}
    started: dict[str, subprocess.Popen[str]] = {}
    for name in names:
        with (tmp_path / f"{name}.log").open("w") as out:
            started[name] = subprocess.Popen(
                [sys.executable, "-m", "brooq.tools", "worker", "worker_app:from_env", "--dsn", dsn,
                 "--name", name, "--progress", "off", "--lease", "30s"],
                cwd=APP.parent, stdout=out, stderr=subprocess.STDOUT, text=True, env=env)
    return started


def stop_workers(started: dict[str, subprocess.Popen[str]]) -> None:
    for proc in started.values():
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)


@pytest.fixture
def workers(db: str, tmp_path: Path) -> Iterator[dict[str, subprocess.Popen[str]]]:
    """Three `brooq worker` processes, named tick-1..3. PostgreSQL checks every 100 ms
    whether their client is still there while a statement runs
    (client_connection_check_interval): a killed worker's tick rolls back at once."""
    started = start_workers(psycopg.conninfo.make_conninfo(db, options="-c client_connection_check_interval=100ms"),
                            tmp_path, ["tick-1", "tick-2", "tick-3"])
    try:
        yield started
    finally:
        stop_workers(started)


@contextmanager
def producer_login(server: Any, db: str) -> Iterator[str]:
    """A login role granted brooq_producer only: its DSN; dropped after."""
    role = f"brooq_test_{uuid.uuid4().hex[:8]}"
    server.execute(sql.SQL("create role {} login in role brooq_producer").format(sql.Identifier(role)))
    try:
        yield psycopg.conninfo.make_conninfo(db, user=role)
    finally:
        server.execute(sql.SQL("drop role {}").format(sql.Identifier(role)))


# A gate that holds a tick in its middle (test only): the tick's update of its schedule's
# row sleeps while public.tick_gate has a row. The tick's job is inserted by then.
GATE = """
create table public.tick_gate (held boolean);
create function public.tick_gate() returns trigger language plpgsql as $$
begin
    while exists (select from public.tick_gate) loop
        perform pg_sleep(0.02);
    end loop;
    return new;
end $$;
create trigger tick_gate before update on brooq.schedule
    for each row when (new.next_tick_at is distinct from old.next_tick_at) execute function public.tick_gate();
"""


def test_workers_tick_each_second_once_and_a_worker_killed_mid_tick_loses_none(
        conn: Conn, db: str, workers: dict[str, subprocess.Popen[str]]) -> None:
    brooq.declare_topic(conn, "echo")
    conn.execute(GATE)
    assert brooq.schedule(conn, "every-second", "* * * * * *", "echo", {"n": 1}, ticker="workers") is None
    first = schedule_row(conn, "every-second")[0]

    def jobs() -> list[tuple[int, datetime]]:
        return schedule_jobs(conn, "echo", '{"n": 1}')

    wait_for(lambda: len(jobs()) >= 2, timeout=30, what="the workers to tick twice")

    # Hold a tick in its middle (its job inserted, not committed), then kill its worker.
    conn.execute("insert into public.tick_gate values (true)")
    waiting = wait_for(lambda: conn.execute(
        "select pid, application_name from pg_stat_activity"
        " where wait_event = 'PgSleep' and query like '%%tick_schedules%%'").fetchone(),
        timeout=10, what="a worker to wait in the middle of its tick")
    backend, application = waiting
    held = schedule_row(conn, "every-second")[0]  # the tick it holds, still owed for the others
    name = application.removeprefix("brooq worker ")
    workers[name].send_signal(signal.SIGKILL)  # kill -9, mid-tick
    wait_for(lambda: conn.execute("select count(*) from pg_stat_activity where pid = %s",
                                  [backend]).fetchone() == (0,),
             timeout=10, what="the killed worker's tick to roll back")
    conn.execute("delete from public.tick_gate")  # the others tick the held tick, and go on
    wait_for(lambda: (schedule_row(conn, "every-second")[1] or first) >= held + timedelta(seconds=2), timeout=20,
             what="the other workers to tick past the held tick")
    for other, proc in workers.items():
        if other != name:
            proc.send_signal(signal.SIGTERM)
    for other, proc in workers.items():
        assert proc.wait(timeout=20) == (0 if other != name else -signal.SIGKILL), other

    _, last, last_job, error = schedule_row(conn, "every-second")
    got = jobs()
    seconds = int((last - first).total_seconds())
    assert len(got) == seconds + 1, "each second from the first tick to the last has exactly one job"
    for n, (_, created_at) in enumerate(got):
        assert first + timedelta(seconds=n) <= created_at < first + timedelta(seconds=n + 60), (
            n, first, [(i, at.time().isoformat()) for i, at in got])
    assert got[-1][0] == last_job and error is None
    assert seconds >= 4


def test_a_producer_holding_a_tick_s_old_key_slows_neither_the_claims_nor_the_tick(
        server: Any, conn: Conn, db: str, tmp_path: Path) -> None:
    """A login with only brooq_producer enqueues, in a transaction it keeps open, a job
    under the key a schedule's next tick once had. A real worker (the default key wait,
    5 s) drains 150 jobs of another topic as fast as without it, and the tick gets its own
    job on time: the tick waits for nothing the producer holds."""
    brooq.declare_topic(conn, "echo")
    brooq.declare_topic(conn, "sleep")
    assert brooq.schedule(conn, "pulse", "* * * * * *", "sleep", {"seconds": 0}, ticker="workers") is None
    started = start_workers(db, tmp_path, ["drain-1"])
    try:
        wait_for(lambda: schedule_row(conn, "pulse")[1] is not None, timeout=30, what="the worker to tick")
        with producer_login(server, db) as producer_dsn, psycopg.connect(producer_dsn) as holder:
            held = schedule_row(conn, "pulse")[0] + timedelta(seconds=1)
            holder.execute("select brooq.enqueue('sleep', '{}', idempotency_key => %s)", [old_key("pulse", held)])
            wait_for(lambda: datetime.now(UTC) >= held + timedelta(seconds=1.5), timeout=10,
                     what="the held tick to come")
            t0 = time.monotonic()
            brooq.enqueue_many(conn, "echo", [{"i": i} for i in range(150)])

            def done() -> int:
                row = conn.execute("select count(*) from brooq.job where topic = 'echo' and state = 'done'").fetchone()
                return int(row[0]) if row else 0

            deadline = t0 + 12
            while done() < 150 and time.monotonic() < deadline:
                time.sleep(0.02)
            drained, took = done(), time.monotonic() - t0
            tick_at = schedule_row(conn, "pulse")[1]
            print(f"drain of 150 jobs with the tick's old key held: {drained} done in {took:.2f} s; "
                  f"last tick {tick_at.isoformat()}, held tick {held.isoformat()}")
            assert drained == 150 and took < 3.0, f"{drained} of 150 jobs drained in {took:.2f} s"
            assert tick_at >= held, f"the held tick still owed {took + 1.5:.1f} s after it came"
            holder.rollback()
        last_job, error = schedule_row(conn, "pulse")[2:]
        assert error is None
        assert conn.execute("select payload, idempotency_key from brooq.job where id = %s",
                            [last_job]).fetchone() == ({"seconds": 0}, None)
    finally:
        stop_workers(started)


def test_pg_cron_s_tick_waits_for_no_producer(server: Any, conn: Conn, db: str) -> None:
    """pg_cron's tick (brooq._schedule_tick, run here by hand) of a schedule whose tick's old
    key a producer holds in an open transaction: it enqueues at once."""
    brooq.declare_topic(conn, "echo")
    conn.execute("insert into brooq.schedule (name, cron, topic, payload, priority, created_at, updated_at,"
                  " ticker) values ('nightly', '0 3 * * *', 'echo', '{\"n\": 1}', 0, now(), now(), 'pg_cron')")
    tick = datetime(2031, 3, 3, 3, 0, tzinfo=UTC)
    with producer_login(server, db) as producer_dsn, psycopg.connect(producer_dsn) as holder, \
            psycopg.connect(db, options="-c statement_timeout=20s") as cron:
        holder.execute("select brooq.enqueue('echo', '{}', idempotency_key => %s)", [old_key("nightly", tick)])
        cron.execute("set brooq.now = '2031-03-03 03:00:00.4+00'")
        t0 = time.monotonic()
        job = cron.execute("select brooq._schedule_tick('nightly')").fetchone()
        took = time.monotonic() - t0
        cron.commit()
        print(f"pg_cron's tick with its old key held: {took:.3f} s")
        assert took < 1.0, f"pg_cron's tick took {took:.2f} s"
        assert job is not None and job[0] is not None
        holder.rollback()


def test_a_tick_waits_at_most_half_a_second_for_an_admin_s_lock(conn: Conn, db: str) -> None:
    """Belt: a tick needs no lock another role can hold, but an admin's DDL can hold one
    it needs (here a SHARE lock on brooq.job). The tick's lock wait is cut at 500 ms: its
    row says 55P03, the tick stays owed, and the caller's lock_timeout is back after. A
    lock on brooq.schedule itself fails the call with 55P03 after 500 ms."""
    brooq.declare_topic(conn, "echo")
    assert brooq.schedule(conn, "pulse", "* * * * * *", "echo", ticker="workers") is None
    owed = schedule_row(conn, "pulse")[0]
    wait_for(lambda: datetime.now(UTC) > owed, timeout=3, what="the first tick to come")
    with psycopg.connect(db) as admin, psycopg.connect(db, options="-c statement_timeout=20s",
                                                       autocommit=True) as worker:
        worker.execute("set role brooq_worker")
        admin.execute("lock table brooq.job in share mode")
        t0 = time.monotonic()
        rows = worker.execute("select schedule, tick, job_id, error from brooq.tick_schedules()").fetchall()
        took = time.monotonic() - t0
        print(f"a tick under an admin's lock: {took:.3f} s, {rows}")
        assert 0.4 < took < 1.5, f"the tick waited {took:.2f} s"
        assert [(r[0], r[1], r[2]) for r in rows] == [("pulse", owed, None)]
        assert rows[0][3].startswith("55P03 "), rows
        assert worker.execute("show lock_timeout").fetchone() == ("0",)
        admin.rollback()
        # a lock outside any tick (the schedules' table itself): the call fails with 55P03
        admin.execute("lock table brooq.schedule in exclusive mode")
        t0 = time.monotonic()
        with pytest.raises(psycopg.errors.LockNotAvailable):
            worker.execute("select * from brooq.tick_schedules()")
        took = time.monotonic() - t0
        assert 0.4 < took < 1.5, f"the call waited {took:.2f} s"
        assert worker.execute("show lock_timeout").fetchone() == ("0",)
        admin.rollback()
    assert schedule_row(conn, "pulse")[0] == owed, "the tick stays owed"
    assert [r[0] for r in conn.execute("select created from brooq.tick_schedules()")][:1] == [True]
