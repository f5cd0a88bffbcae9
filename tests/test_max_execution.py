"""max_execution: a job's time across all its attempts, from its first claim.

A real worker (in a thread, on the test database): a handler that outlives
max_execution over two attempts is stopped and the job fails with the cause, never
dead by max_execution alone; the check at start of attempt timeouts against the
topic's max_execution as the database holds it (declared by the worker, or by an
admin when the worker may not declare); `brooq declare-topic --max-execution`.
"""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from typing import Any

import brooq
import psycopg
import pytest
from helpers import FAST, brooq_cli, enqueue, fate, running, wait_for

Conn = psycopg.Connection[tuple[Any, ...]]


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_handler_that_outlives_max_execution_over_two_attempts_is_stopped(
        db: str, conn: Conn, kind: str) -> None:
    worker = brooq.Worker(db, **FAST)
    runs: list[tuple[int, float, float, str | None]] = []  # attempt, started, stopped, why
    lock = threading.Lock()
    settings: dict[str, Any] = {
        "max_attempts": 3, "timeout": timedelta(seconds=1.2),
        "max_execution": timedelta(seconds=2), "backoff_base": timedelta(milliseconds=100),
        "backoff_max": timedelta(milliseconds=100)}

    if kind == "sync":
        @worker.handler("slow", **settings)
        def slow(job: brooq.Job) -> None:
            started = time.monotonic()
            job.canceled.wait(10)  # runs until the worker stops it
            with lock:
                runs.append((job.attempt, started, time.monotonic(), job.canceled.reason))
    else:
        @worker.handler("slow", **settings)
        async def slow_async(job: brooq.Job) -> None:
            started = time.monotonic()
            try:
                await job.wait_canceled()
            finally:
                with lock:
                    runs.append((job.attempt, started, time.monotonic(), job.canceled.reason))

    with running(worker):
        [job_id] = enqueue(conn, "slow")
        dead = wait_for(lambda: (f := fate(conn, job_id)).state == "dead" and f, timeout=15,
                        what="the job to be dead")
        wait_for(lambda: len(runs) == 2, timeout=5, what="both handlers to return")
    # attempt 1 ran into its own timeout; attempt 2 was stopped by max_execution, before
    # its timeout, 2 s after the first claim; attempt 3 came after the deadline: the
    # handler was not run, and the attempt failed, the last one: dead.
    (a1, s1, e1, why1), (a2, s2, e2, why2) = sorted(runs)
    assert (a1, why1, a2, why2) == (1, "timeout", 2, "max_execution")
    assert 1.1 <= e1 - s1 <= 1.6
    assert e2 - s2 < 1.1, "the second attempt was stopped before its own timeout"
    assert 1.6 <= e2 - s1 <= 2.6, "stopped max_execution (less the worker's margin) after the first claim"
    assert dead.attempts == 3
    assert dead.last_error.startswith("max_execution 2s exceeded: the job's time since its first "
                                      "claim ran out at "), dead.last_error
    assert dead.last_error.endswith("before this attempt started; the handler was not run")
    s = worker.snapshot()
    assert (s.claimed, s.failed, s.dead) == (3, 2, 1)


def test_max_execution_fails_the_attempt_and_never_makes_the_job_dead_by_itself(
        db: str, conn: Conn) -> None:
    worker = brooq.Worker(db, **FAST)
    stopped = threading.Event()

    @worker.handler("budget", max_attempts=5, timeout=None, max_execution=timedelta(seconds=1),
                    backoff_base=timedelta(minutes=1), backoff_max=timedelta(minutes=1))
    def budget(job: brooq.Job) -> None:
        job.canceled.wait(10)
        stopped.set()

    with running(worker):
        [job_id] = enqueue(conn, "budget")
        failed = wait_for(lambda: (f := fate(conn, job_id)).state == "failed" and f, timeout=10,
                          what="the attempt to fail")
        assert stopped.wait(5)
    assert failed.attempts == 1
    assert failed.last_error.startswith("max_execution 1s exceeded: the job's time since its first "
                                        "claim ran out at "), failed.last_error
    assert failed.last_error.endswith("; the attempt was stopped")
    row = conn.execute("select available_at > now() + interval '20 seconds', first_claimed_at is not null "
                       "from brooq.job where id = %s", [job_id]).fetchone()
    assert row == (True, True), "failed, waiting for its backoff like any failed attempt; not dead"


def test_timeouts_longer_than_max_execution_are_refused_at_start_all_at_once(db: str) -> None:
    worker = brooq.Worker(db, **FAST)
    for topic, timeout, limit in (("t.a", timedelta(minutes=2), timedelta(minutes=1)),
                                  ("t.b", timedelta(seconds=30), timedelta(seconds=10)),
                                  ("t.ok", timedelta(seconds=10), timedelta(minutes=1)),
                                  ("t.none", None, timedelta(seconds=5))):
        worker.handler(topic, timeout=timeout, max_execution=limit)(lambda job: None)
    started = time.monotonic()
    with pytest.raises(brooq.ConfigError) as caught:
        worker.run()
    assert time.monotonic() - started < 5
    assert caught.value.problems == [
        "handler 't.a': timeout 120s is longer than the topic's max_execution 60s (a job's time "
        "across all its attempts): shorten the timeout, or raise max_execution",
        "handler 't.b': timeout 30s is longer than the topic's max_execution 10s (a job's time "
        "across all its attempts): shorten the timeout, or raise max_execution"]


def test_a_worker_that_may_not_declare_checks_against_the_database(db: str, conn: Conn) -> None:
    """The admin's max_execution counts, not the handler's (the worker cannot declare)."""
    role = f"brooq_test_mx_{conn.info.backend_pid}"
    conn.execute(f"create role {role} login in role brooq_worker")
    try:
        brooq.declare_topic(conn, "t.admin", max_execution=timedelta(minutes=1))
        worker = brooq.Worker(psycopg.conninfo.make_conninfo(db, user=role), **FAST)
        worker.handler("t.admin", timeout=timedelta(minutes=5))(lambda job: None)
        with pytest.raises(brooq.ConfigError) as caught:
            worker.run()
        assert caught.value.problems == [
            "handler 't.admin': timeout 300s is longer than the topic's max_execution 60s (a job's "
            "time across all its attempts): shorten the timeout, or raise max_execution"]
    finally:
        conn.execute(f"drop role {role}")


def test_a_bad_max_execution_is_refused(db: str) -> None:
    worker = brooq.Worker(db, **FAST)
    with pytest.raises(brooq.ConfigError, match="max_execution must be positive or None"):
        worker.handler("t.neg", max_execution=timedelta(seconds=-1))
    worker.handler("t.short", max_execution=timedelta(milliseconds=500), timeout=None)(lambda job: None)
    with pytest.raises(brooq.ConfigError, match='invalid max_execution 00:00:00.5 for topic "t.short"'):
        worker.run()


def test_cli_declare_topic_max_execution(db: str, conn: Conn) -> None:
    done = brooq_cli("declare-topic", "reports", "--max-execution", "10m", dsn=db)
    assert done.returncode == 0, done.stderr
    row = conn.execute("select max_execution from brooq.topic where name = 'reports'").fetchone()
    assert row == (timedelta(minutes=10),)
