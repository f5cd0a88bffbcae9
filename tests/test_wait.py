"""brooq.wait and job.progress: a caller waits for a job's fate, woken by NOTIFY on
settle or cancel; a running handler reports how far it got, carried by heartbeats."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
from datetime import timedelta
from typing import Any

import brooq
import psycopg
import pytest
from helpers import running, wait_for

Conn = psycopg.Connection[Any]


def claim_and_settle(dsn: str, topic: str, outcome: str = "done") -> None:
    with psycopg.connect(dsn, autocommit=True) as c:
        (job, token), = c.execute("select id, lease_token from brooq.claim('w', array[%s])", [topic]).fetchall()
        c.execute("select brooq.settle(%s, 'w', %s, %s, result => '{\"ok\": 1}')", [job, token, outcome])


def watches(conn: Conn) -> int:
    row = conn.execute("select count(*) from brooq.job_watch").fetchone()
    return int(row[0]) if row else -1


def test_wait_returns_the_fate_when_a_worker_settles_the_job(db: str, conn: Conn) -> None:
    worker = brooq.Worker(db, concurrency=2, poll_interval=timedelta(milliseconds=100))

    @worker.handler("slow")
    def slow(job: brooq.Job) -> dict[str, int]:
        time.sleep(0.5)
        return {"n": job.payload["n"]}

    brooq.declare_topic(conn, "slow")
    job = brooq.enqueue(conn, "slow", {"n": 7})
    with running(worker):
        started = time.monotonic()
        fate = brooq.wait(conn, job.id, timeout=20)
        waited = time.monotonic() - started
    assert fate is not None and (fate.state, fate.result) == ("done", {"n": 7})
    # wait never polls: only a NOTIFY (or the timeout) ends its sleep, so an answer
    # long before the 20 s timeout was a NOTIFY's
    assert waited < 10
    assert watches(conn) == 0, "the watch was not removed"


def test_wait_wakes_on_cancel_and_gives_up_at_its_timeout(db: str, conn: Conn) -> None:
    brooq.declare_topic(conn, "idle")
    job = brooq.enqueue(conn, "idle", {})
    started = time.monotonic()
    with pytest.raises(TimeoutError, match=f"job {job.id} is still pending after 0.3s"):
        brooq.wait(conn, job.id, timeout=0.3)
    assert time.monotonic() - started >= 0.3
    assert watches(conn) == 0

    got: list[brooq.JobFate | None] = []
    waiter = threading.Thread(target=lambda: got.append(brooq.wait(psycopg.connect(db, autocommit=True),
                                                                   job.id, timeout=20)))
    waiter.start()
    wait_for(lambda: watches(conn) == 1, what="the waiter's watch")
    assert brooq.cancel(conn, job.id)
    waiter.join(10)
    assert [f.state for f in got if f] == ["canceled"]
    assert brooq.wait(conn, -1, timeout=1) is None  # no such job


def test_settles_notify_only_watched_jobs(db: str, conn: Conn) -> None:
    brooq.declare_topic(conn, "quiet")
    unwatched = brooq.enqueue(conn, "quiet", {})
    with psycopg.connect(db, autocommit=True) as listener:
        listener.execute("listen brooq_settled")
        claim_and_settle(db, "quiet")
        assert list(listener.notifies(timeout=0.5)) == [], "a settle nobody watches sent NOTIFY"
        watched = brooq.enqueue(conn, "quiet", {})
        (watch,), = conn.execute("select brooq.watch(%s)", [watched.id]).fetchall()
        claim_and_settle(db, "quiet")
        notes = [n.payload for n in listener.notifies(timeout=2, stop_after=1)]
        assert notes == [str(watched.id)]
        assert conn.execute("select brooq.unwatch(%s), brooq.unwatch(%s)", [watch, watch]).fetchone() == (True, False)
    assert brooq.get_job(conn, unwatched.id).state == "done"  # type: ignore[union-attr]


def test_wait_needs_autocommit(db: str) -> None:
    with psycopg.connect(db) as conn, pytest.raises(ValueError, match="autocommit"):
        brooq.wait(conn, 1)


def test_wait_async(db: str, conn: Conn) -> None:
    brooq.declare_topic(conn, "async.wait")
    job = brooq.enqueue(conn, "async.wait", {})

    async def main() -> brooq.JobFate | None:
        async with await psycopg.AsyncConnection.connect(db, autocommit=True) as aconn:
            settler = asyncio.get_running_loop().run_in_executor(
                None, lambda: (time.sleep(0.3), claim_and_settle(db, "async.wait", "cancel")))
            fate = await brooq.wait_async(aconn, job.id, timeout=20)
            await settler
            return fate

    fate = asyncio.run(main())
    assert fate is not None and fate.state == "canceled"


def test_a_handler_reports_progress_that_heartbeats_carry(db: str, conn: Conn) -> None:
    worker = brooq.Worker(db, lease=timedelta(seconds=1.5), poll_interval=timedelta(milliseconds=100))
    release = threading.Event()

    @worker.handler("long")
    def long(job: brooq.Job) -> None:
        job.progress(0.5, "half way")
        release.wait(20)

    with running(worker):
        job = brooq.enqueue(conn, "long", {})
        fate = wait_for(lambda: (f := brooq.get_job(conn, job.id)) and f.progress and f, timeout=10,
                        what="the progress to reach the database")
        assert fate.state == "processing"
        assert fate.progress == {"fraction": 0.5, "message": "half way"}
        shown = conn.execute("select progress from brooq.in_flight where id = %s", [job.id]).fetchone()
        assert shown == ({"fraction": 0.5, "message": "half way"},)
        line = subprocess.run([sys.executable, "-m", "brooq.tools.cli", "job", str(job.id), "--dsn", db],
                              capture_output=True, text=True, check=True).stdout
        assert 'progress={"message":"half way","fraction":0.5}' in line, line  # jsonb's key order
        release.set()
        assert (brooq.wait(conn, job.id, timeout=20) or fate).state == "done"
    with pytest.raises(ValueError, match="between 0 and 1"):
        brooq.Job(1, "t", {}, 1, 1, 0, 1, fate.created_at).progress(1.5)
