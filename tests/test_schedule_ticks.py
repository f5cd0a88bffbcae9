"""Schedules ticked by the workers (brooq.tick_schedules, brooq.ticker): several real
`brooq worker` processes tick one every-second schedule, one of them is killed (kill -9)
in the middle of a tick, and every tick still gets exactly one job."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import brooq
import psycopg
import pytest
from helpers import wait_for

APP = Path(__file__).with_name("worker_app.py")
Conn = psycopg.Connection[tuple[Any, ...]]
KEY = "schedule:every-second:"


def ticks(conn: Conn) -> list[datetime]:
    """The ticks of the schedule's jobs, oldest first."""
    rows = conn.execute("select idempotency_key from brooq.job where idempotency_key like %s order by 1",
                        [KEY + "%"]).fetchall()
    return [datetime.strptime(key[len(KEY):], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
            for (key,) in rows]


def key(tick: datetime) -> str:
    return KEY + tick.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.fixture
def workers(db: str, tmp_path: Path) -> Iterator[dict[str, subprocess.Popen[str]]]:
    """Three `brooq worker` processes, named tick-1..3. Their connections wait up to 20 s for
    another transaction's job of the same key (brooq.key_wait), and PostgreSQL checks every
    100 ms whether their client is still there while a statement runs
    (client_connection_check_interval): a killed worker's tick rolls back at once."""
    dsn = psycopg.conninfo.make_conninfo(
        db, options="-c brooq.key_wait=20s -c client_connection_check_interval=100ms")
    env = {k: v for k, v in os.environ.items() if not k.startswith("BROOQ_")}
    started: dict[str, subprocess.Popen[str]] = {}
    for n in (1, 2, 3):
        with (tmp_path / f"tick-{n}.log").open("w") as out:
            started[f"tick-{n}"] = subprocess.Popen(
                [sys.executable, "-m", "brooq.tools", "worker", "worker_app:from_env", "--dsn", dsn,
                 "--name", f"tick-{n}", "--progress", "off", "--lease", "30s"],
                cwd=APP.parent, stdout=out, stderr=subprocess.STDOUT, text=True, env=env)
    try:
        yield started
    finally:
        for proc in started.values():
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=10)


def test_workers_tick_each_second_once_and_a_worker_killed_mid_tick_loses_none(
        conn: Conn, db: str, workers: dict[str, subprocess.Popen[str]]) -> None:
    brooq.declare_topic(conn, "echo")
    assert brooq.schedule(conn, "every-second", "* * * * * *", "echo", {"n": 1}, ticker="workers") is None
    wait_for(lambda: len(ticks(conn)) >= 2, timeout=30, what="the workers to tick twice")

    # Hold a tick: another transaction enqueues (uncommitted) the job of a tick two seconds
    # ahead; the worker that ticks it waits for that key, inside its tick's transaction.
    row = conn.execute("select next_tick_at from brooq.schedule where name = 'every-second'").fetchone()
    assert row is not None
    held = row[0] + timedelta(seconds=2)
    with psycopg.connect(db) as holder:
        holder.execute("select brooq.enqueue('echo', '{\"held\": true}', idempotency_key => %s)", [key(held)])
        waiting = wait_for(lambda: conn.execute(
            "select pid, application_name from pg_stat_activity"
            " where wait_event_type = 'Lock' and query like '%%tick_schedules%%'").fetchone(),
            timeout=10, what="a worker to wait in the middle of its tick")
        backend, application = waiting
        name = application.removeprefix("brooq worker ")
        workers[name].send_signal(signal.SIGKILL)  # kill -9, mid-tick
        wait_for(lambda: conn.execute("select count(*) from pg_stat_activity where pid = %s",
                                      [backend]).fetchone() == (0,),
                 timeout=10, what="the killed worker's tick to roll back")
        holder.rollback()  # the key is free: the tick is owed still, and the others tick it
    wait_for(lambda: max(ticks(conn)) >= held + timedelta(seconds=2), timeout=20,
             what="the other workers to tick past the held tick")
    for other, proc in workers.items():
        if other != name:
            proc.send_signal(signal.SIGTERM)
    for other, proc in workers.items():
        assert proc.wait(timeout=20) == (0 if other != name else -signal.SIGKILL), other

    got = ticks(conn)
    first, last = got[0], got[-1]
    every = [first + timedelta(seconds=s) for s in range(int((last - first).total_seconds()) + 1)]
    assert got == every, "each second from the first tick to the last has exactly one job"
    assert held in got
    payload = conn.execute("select payload from brooq.job where idempotency_key = %s", [key(held)]).fetchone()
    assert payload == ({"n": 1},), "the held tick's job is the schedule's, enqueued by a living worker"
    assert len(got) >= 5
    state = conn.execute("select next_tick_at > %s, last_error from brooq.schedules where name = 'every-second'",
                         [last]).fetchone()
    assert state == (True, None)
