"""A Worker runs again after a graceful stop: jobs are processed each time, and no
thread or database connection of a run outlives it."""

from __future__ import annotations

import threading
import urllib.request
from typing import Any

import brooq
import psycopg
import pytest
from helpers import FAST, wait_for

Conn = psycopg.Connection[tuple[Any, ...]]


def connections(conn: Conn, worker: brooq.Worker) -> int:
    row = conn.execute("select count(*) from pg_stat_activity where application_name = %s",
                       [f"brooq worker {worker.name}"[:63]]).fetchone()
    assert row is not None
    return int(row[0])


def brooq_threads() -> list[str]:
    return sorted(t.name for t in threading.enumerate() if t.name.startswith("brooq"))


def test_a_worker_runs_again_after_a_graceful_stop(db: str, conn: Conn) -> None:
    worker = brooq.Worker(db, concurrency=3, metrics_address="127.0.0.1:0", **FAST)

    @worker.handler("sync")
    def sync(job: brooq.Job) -> Any:
        return {"round": job.payload["round"]}

    @worker.handler("async")
    async def async_(job: brooq.Job) -> Any:
        return {"round": job.payload["round"]}

    worker.declare_topics()
    before = brooq_threads()
    threads_before = threading.active_count()
    for round_ in (1, 2, 3):
        ids = [brooq.enqueue(conn, topic, {"round": round_}).id
               for topic in ("sync", "async") for _ in range(5)]
        thread = threading.Thread(target=worker.run, name=f"test-run-{round_}")
        thread.start()
        wait_for(lambda: all(brooq.get_job(conn, i).state == "done" for i in ids),  # type: ignore[union-attr]
                 what=f"round {round_}'s jobs")
        assert worker.health() is None
        url = worker.metrics_url
        assert url is not None
        with urllib.request.urlopen(f"{url}/healthz", timeout=5) as response:
            assert response.status == 200
        assert connections(conn, worker) == 3  # the loop's, the settling thread's, the listener's
        with pytest.raises(RuntimeError, match="running already"):
            worker.run()  # one run at a time
        worker.stop()
        thread.join(timeout=15)
        assert not thread.is_alive()
        assert [brooq.get_job(conn, i).result for i in ids] == [{"round": round_}] * 10  # type: ignore[union-attr]
        assert worker.health() == "the worker is not running"
        assert worker.metrics_url is None
        # nothing of the run is left: its threads (pool, event loop, listener, metrics
        # server) end, its connections close
        wait_for(lambda: brooq_threads() == before, what=f"round {round_}'s threads to end")
        wait_for(lambda: connections(conn, worker) == 0, what=f"round {round_}'s connections")
        assert threading.active_count() == threads_before
        assert worker.snapshot().done == 10 * round_  # counters go on across runs


def test_a_stop_between_two_runs_stops_the_next_one(db: str, conn: Conn) -> None:
    worker = brooq.Worker(db, **FAST)

    @worker.handler("t")
    def handle(job: brooq.Job) -> None:
        return None

    worker.declare_topics()
    worker.stop()  # before the first run: it starts and stops at once, as always
    worker.run()
    job = brooq.enqueue(conn, "t", {})
    thread = threading.Thread(target=worker.run)
    thread.start()
    wait_for(lambda: brooq.get_job(conn, job.id).state == "done", what="the job")  # type: ignore[union-attr]
    worker.stop()
    thread.join(timeout=15)
    assert not thread.is_alive()
