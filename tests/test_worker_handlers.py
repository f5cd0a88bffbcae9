"""The worker in this process (a thread): handler signals, async, chain, leases, timeouts."""

from __future__ import annotations

import asyncio
import gc
import logging
import threading
import time
from datetime import timedelta
from typing import Any

import brooq
import psycopg
import pytest
from helpers import FAST, fate, running, wait_for

Conn = psycopg.Connection[tuple[Any, ...]]


def settled(conn: Conn, job_id: int) -> brooq.JobFate | None:
    f = fate(conn, job_id)
    return f if f.state not in ("pending", "processing") else None


def enqueue_sql(conn: Conn, topic: str, payload: str = "{}") -> int:
    row = conn.execute("select id from brooq.enqueue(%s, %s::jsonb)", [topic, payload]).fetchone()
    assert row is not None
    return int(row[0])


def test_a_job_enqueued_from_sql_is_done_with_its_result(db: str, conn: Conn) -> None:
    worker = brooq.Worker(db, **FAST)

    @worker.handler("echo")
    def echo(job: brooq.Job) -> Any:
        return {"got": job.payload, "attempt": job.attempt}

    with running(worker):
        job_id = enqueue_sql(conn, "echo", '{"n": 42}')
        done = wait_for(lambda: settled(conn, job_id), what="the job to settle")
    assert done.state == "done"
    assert done.result == {"got": {"n": 42}, "attempt": 1}
    assert (done.attempts, done.last_error, done.locked_by) == (1, None, None)
    s = worker.snapshot()
    assert (s.claimed, s.done, s.failed, s.in_flight) == (1, 1, 0, 0)


def test_every_handler_signal(db: str, conn: Conn) -> None:
    worker = brooq.Worker(db, **FAST)
    settings = {"backoff_base": timedelta(seconds=20), "backoff_max": timedelta(minutes=1)}

    @worker.handler("ret", **settings)
    def ret(job: brooq.Job) -> Any:
        return [1, "two"]

    @worker.handler("none", **settings)
    def none(job: brooq.Job) -> None:
        return None

    @worker.handler("retry", **settings)
    def retry(job: brooq.Job) -> None:
        raise brooq.Retry(timedelta(minutes=5), reason="rate limited")  # clamped to backoff_max

    @worker.handler("retry-backoff", **settings)
    def retry_backoff(job: brooq.Job) -> None:
        raise brooq.Retry()

    @worker.handler("preserve", **settings)
    def preserve(job: brooq.Job) -> None:
        raise brooq.PreserveAttempt(30.0)

    @worker.handler("cancel", **settings)
    def cancel(job: brooq.Job) -> None:
        raise brooq.Cancel("not wanted")

    @worker.handler("dead", max_attempts=5, **settings)
    def dead(job: brooq.Job) -> None:
        raise brooq.Dead("account closed")

    @worker.handler("dead-wrapped", max_attempts=5, **settings)
    def dead_wrapped(job: brooq.Job) -> None:
        raise ValueError("closed") from brooq.Dead()

    @worker.handler("boom", **settings)
    def boom(job: brooq.Job) -> None:
        secret = "hunter2"  # a local: must never reach last_error
        raise ValueError(f"bad input {len(secret)}")

    @worker.handler("last", max_attempts=1, **settings)
    def last(job: brooq.Job) -> None:
        raise RuntimeError("gave up")

    @worker.handler("not-json", **settings)
    def not_json(job: brooq.Job) -> Any:
        return {"when": object()}

    topics = ["ret", "none", "retry", "retry-backoff", "preserve", "cancel", "dead", "dead-wrapped", "boom", "last",
              "not-json"]
    with running(worker):
        ids = {t: enqueue_sql(conn, t) for t in topics}
        fates = {t: wait_for(lambda i=i: settled(conn, i), what=t) for t, i in ids.items()}

    def waits(f: brooq.JobFate) -> float:
        return (f.available_at - f.updated_at).total_seconds()

    assert (fates["ret"].state, fates["ret"].result) == ("done", [1, "two"])
    assert (fates["none"].state, fates["none"].result) == ("done", None)
    r = fates["retry"]
    assert (r.state, r.attempts, r.last_error, waits(r)) == ("failed", 1, "Retry: rate limited", 60)
    rb = fates["retry-backoff"]
    assert rb.state == "failed" and 10 <= waits(rb) <= 20
    p = fates["preserve"]
    assert (p.state, p.attempts, waits(p)) == ("failed", 0, 30)
    c = fates["cancel"]
    assert (c.state, c.last_error) == ("canceled", "Cancel: not wanted")
    # Dead: dead at once, on attempt 1 of 5, the reason recorded (wrapped too, as errors.As)
    d = fates["dead"]
    assert (d.state, d.attempts, d.last_error) == ("dead", 1, "Dead: account closed")
    dw = fates["dead-wrapped"]
    assert (dw.state, dw.attempts, dw.last_error) == (
        "dead", 1, "dead: no attempt can succeed (the handler) (raised as ValueError: closed)")
    b = fates["boom"]
    assert (b.state, b.last_error) == ("failed", "ValueError: bad input 7")
    assert (fates["last"].state, fates["last"].last_error) == ("dead", "RuntimeError: gave up")
    nj = fates["not-json"]
    assert nj.state == "failed" and nj.result is None
    assert nj.last_error == "the return value is not JSON: TypeError: Object of type object is not JSON serializable"

    s = worker.snapshot()
    assert (s.claimed, s.done, s.failed, s.retried, s.dead, s.canceled, s.lease_lost) == (11, 2, 3, 2, 3, 1, 0)
    assert s.topics["last"].dead == s.topics["dead"].dead == s.topics["dead-wrapped"].dead == 1


def test_async_handlers_run_on_the_workers_event_loop(db: str, conn: Conn) -> None:
    worker = brooq.Worker(db, concurrency=20, **FAST)
    loops: set[int] = set()

    @worker.handler("fetch")
    async def fetch(job: brooq.Job) -> Any:
        loops.add(id(asyncio.get_running_loop()))
        await asyncio.sleep(0.3)
        if job.payload["n"] == 0:
            raise brooq.Retry(timedelta(seconds=60))
        return job.payload["n"] * 2

    with running(worker):
        started = time.monotonic()
        jobs = brooq.enqueue_many(conn, "fetch", [{"n": n} for n in range(20)])
        fates = [wait_for(lambda j=j: settled(conn, j.id)) for j in jobs]
        elapsed = time.monotonic() - started
    assert [f.result for f in fates[1:]] == [n * 2 for n in range(1, 20)]
    assert fates[0].state == "failed" and fates[0].last_error == "Retry requested by the handler"
    assert len(loops) == 1
    assert elapsed < 5, "20 handlers sleeping 0.3s should run concurrently (6s one by one)"


def test_an_async_worker_runs_the_neighbours_of_a_payload_it_cannot_decode(db: str, conn: Conn) -> None:
    worker = brooq.Worker(db, concurrency=8, **FAST)
    runs: list[int] = []

    @worker.handler("fetch")
    async def fetch(job: brooq.Job) -> Any:
        runs.append(job.payload["n"])

    brooq.declare_topic(conn, "fetch")
    normal = [enqueue_sql(conn, "fetch", f'{{"n": {n}}}') for n in range(3)]
    deep = enqueue_sql(conn, "fetch", "[" * 1500 + "]" * 1500)
    with running(worker):
        wait_for(lambda: conn.execute("select count(*) = 4 from brooq.job where state in ('done', 'dead')"
                                      ).fetchone() == (True,), what="every job settled")
    assert sorted(runs) == [0, 1, 2]
    assert [fate(conn, j).attempts for j in normal] == [1, 1, 1]
    row = conn.execute("select state, attempts, last_error from brooq.job where id = %s", [deep]).fetchone()
    assert row is not None and row[:2] == ("dead", 1)
    assert row[2].startswith("payload cannot be decoded: RecursionError: maximum recursion depth")
    assert worker.snapshot().lease_lost == 0


def test_heartbeats_keep_a_long_job_past_several_leases(db: str, conn: Conn) -> None:
    worker = brooq.Worker(db, lease=timedelta(seconds=1), poll_interval=timedelta(milliseconds=100))
    thief = brooq.Worker(db, lease=timedelta(seconds=1), poll_interval=timedelta(milliseconds=100))

    @worker.handler("long", timeout=None)
    def long(job: brooq.Job) -> str:
        assert not job.canceled.wait(3.5)
        return "finished"

    @thief.handler("long", timeout=None)
    def steal(job: brooq.Job) -> str:
        return "stolen"

    with running(worker):
        job_id = enqueue_sql(conn, "long")
        wait_for(lambda: worker.snapshot().in_flight == 1)
        with running(thief):  # reaps every 0.5s and claims whatever becomes ready
            done = wait_for(lambda: settled(conn, job_id), timeout=10)
    assert (done.state, done.result, done.attempts, done.last_error) == ("done", "finished", 1, None)
    assert worker.snapshot().lease_lost == 0 and thief.snapshot().claimed == 0


def test_cancel_in_flight_stops_the_handler_and_writes_nothing(db: str, conn: Conn) -> None:
    lease = timedelta(seconds=1.5)
    worker = brooq.Worker(db, lease=lease, poll_interval=timedelta(milliseconds=100))
    saw_cancel: list[float] = []

    @worker.handler("child")
    def child(job: brooq.Job) -> None:
        return None

    @worker.handler("work", timeout=None)
    def work(job: brooq.Job) -> str:
        job.chain("child", {"from": job.id})
        job.canceled.wait(30)
        saw_cancel.append(time.monotonic())
        assert job.canceled.reason == "lease lost"
        return "finished anyway"  # must not be written

    with running(worker):
        job_id = enqueue_sql(conn, "work")
        wait_for(lambda: worker.snapshot().in_flight == 1)
        canceled_at = time.monotonic()
        assert brooq.cancel(conn, job_id)
        wait_for(lambda: saw_cancel, timeout=5, what="the handler to see the cancel")
        wait_for(lambda: worker.snapshot().in_flight == 0)
        time.sleep(0.3)  # anything the worker would write, it would have written by now
        f = fate(conn, job_id)
    assert saw_cancel[0] - canceled_at <= lease.total_seconds() / 3 + 1
    assert (f.state, f.result, f.last_error, f.attempts) == ("canceled", None, None, 1)
    assert conn.execute("select count(*) from brooq.job where topic = 'child'").fetchone() == (0,)
    s = worker.snapshot()
    assert (s.lease_lost, s.done, s.topics["work"].lease_lost) == (1, 0, 1)


def test_chained_jobs_are_enqueued_only_when_the_job_is_done(db: str, conn: Conn) -> None:
    worker = brooq.Worker(db, **FAST)

    @worker.handler("parent", max_attempts=1)
    def parent(job: brooq.Job) -> str:
        job.chain("child", {"parent": job.id, "step": 1}, key=f"child-of-{job.id}")
        job.chain("child", {"parent": job.id, "step": 2}, delay=timedelta(hours=1), priority=3)
        if job.payload["fail"]:
            raise RuntimeError("parent failed")
        return "parent done"

    @worker.handler("child")
    def child(job: brooq.Job) -> int:
        return int(job.payload["step"])

    @worker.handler("bad-chain", max_attempts=1)
    def bad_chain(job: brooq.Job) -> None:
        job.chain("no-such-topic", {})

    with running(worker):
        ok = enqueue_sql(conn, "parent", '{"fail": false}')
        failing = enqueue_sql(conn, "parent", '{"fail": true}')
        bad = enqueue_sql(conn, "bad-chain")
        assert wait_for(lambda: settled(conn, ok)).state == "done"
        assert wait_for(lambda: settled(conn, failing)).state == "dead"
        b = wait_for(lambda: settled(conn, bad))
        children = conn.execute(
            "select payload, state, idempotency_key, priority, available_at > now() + interval '50 min'"
            "  from brooq.job where topic = 'child' order by id").fetchall()
        first = wait_for(lambda: conn.execute(
            "select state, result from brooq.job where topic = 'child' and state = 'done'").fetchone())
    assert [c[0]["parent"] for c in children] == [ok, ok]
    assert children[0][2:] == (f"child-of-{ok}", 0, False)
    assert children[1][2:] == (None, 3, True)
    assert first == ("done", 1)
    assert b.state == "dead" and b.last_error is not None
    assert b.last_error.startswith("chain: UnknownTopic: topic \"no-such-topic\" does not exist")


def test_an_attempt_timeout_cancels_and_fails_the_attempt(db: str, conn: Conn) -> None:
    worker = brooq.Worker(db, **FAST)
    reasons: list[str | None] = []

    @worker.handler("slow", timeout=timedelta(milliseconds=300), max_attempts=1)
    def slow(job: brooq.Job) -> str:
        job.canceled.wait(10)
        reasons.append(job.canceled.reason)
        return "too late"

    @worker.handler("slow-async", timeout=timedelta(milliseconds=300), max_attempts=1)
    async def slow_async(job: brooq.Job) -> str:
        await asyncio.sleep(10)  # canceled by the worker
        return "too late"

    with running(worker):
        ids = [enqueue_sql(conn, "slow"), enqueue_sql(conn, "slow-async")]
        fates = [wait_for(lambda i=i: settled(conn, i), timeout=5) for i in ids]
        wait_for(lambda: worker.snapshot().in_flight == 0, timeout=5)
    for f in fates:
        assert (f.state, f.result, f.last_error) == ("dead", None, "timed out after 300ms")
    assert reasons == ["timeout"]
    assert worker.snapshot().hung == 0


def test_the_watchdog_reports_a_handler_that_ignores_cancellation(
        db: str, conn: Conn, caplog: pytest.LogCaptureFixture) -> None:
    worker = brooq.Worker(db, hung_grace=timedelta(milliseconds=300), **FAST)
    release = threading.Event()

    @worker.handler("stubborn", timeout=timedelta(milliseconds=200))
    def stubborn(job: brooq.Job) -> None:
        release.wait(10)  # ignores job.canceled

    with caplog.at_level(logging.ERROR, logger="brooq.worker"), running(worker):
        job_id = enqueue_sql(conn, "stubborn")
        wait_for(lambda: worker.snapshot().hung == 1, timeout=5, what="the watchdog")
        assert worker.snapshot().in_flight == 1  # the hung handler still holds its slot
        release.set()
        wait_for(lambda: worker.snapshot().in_flight == 0)
    assert fate(conn, job_id).last_error == "timed out after 200ms"
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1 and f"job {job_id} (stubborn)" in errors[0].getMessage()
    assert worker.metrics.registry.get_sample_value(
        "brooq_hung_handlers_total", {"topic": "stubborn"}) == 1


def test_a_handler_crash_never_kills_the_worker(db: str, conn: Conn) -> None:
    worker = brooq.Worker(db, **FAST)

    @worker.handler("crash", max_attempts=1)
    def crash(job: brooq.Job) -> None:
        if job.payload["how"] == "exit":
            raise SystemExit(3)
        if job.payload["how"] == "interrupt":
            raise KeyboardInterrupt
        raise MemoryError

    with running(worker):
        ids = [enqueue_sql(conn, "crash", f'{{"how": "{h}"}}') for h in ("exit", "interrupt", "memory")]
        fates = [wait_for(lambda i=i: settled(conn, i)) for i in ids]
        after = enqueue_sql(conn, "crash", '{"how": "exit"}')
        assert wait_for(lambda: settled(conn, after)).state == "dead"
    assert [f.last_error for f in fates] == ["SystemExit: 3", "KeyboardInterrupt", "MemoryError"]


def test_a_killed_connection_fails_nothing(db: str, conn: Conn) -> None:
    worker = brooq.Worker(db, lease=timedelta(seconds=3), poll_interval=timedelta(milliseconds=100))
    release = threading.Event()

    @worker.handler("steady")
    def steady(job: brooq.Job) -> str:
        release.wait(10)
        return "finished"

    with running(worker):
        ids = [j.id for j in brooq.enqueue_many(conn, "steady", [{}] * 3)]
        wait_for(lambda: worker.snapshot().in_flight == 3)
        killed = conn.execute("select count(pg_terminate_backend(pid)) from pg_stat_activity"
                              " where application_name like 'brooq worker%'").fetchone()
        assert killed is not None and killed[0] >= 2  # the loop's and the listener's
        release.set()  # the handlers finish while the worker is reconnecting
        fates = [wait_for(lambda i=i: settled(conn, i)) for i in ids]
    assert [(f.state, f.attempts, f.result, f.last_error) for f in fates] == [
        ("done", 1, "finished", None)] * 3
    s = worker.snapshot()
    assert (s.done, s.failed, s.lease_lost) == (3, 0, 0)


def test_least_privilege_worker_role(db: str, conn: Conn) -> None:
    role = f"brooq_test_worker_{conn.info.backend_pid}"
    conn.execute(f"create role {role} login in role brooq_worker, brooq_producer")
    try:
        brooq.declare_topic(conn, "limited")
        dsn = psycopg.conninfo.make_conninfo(db, user=role)
        worker = brooq.Worker(dsn, **FAST)

        @worker.handler("limited")
        def limited(job: brooq.Job) -> str:
            if not job.payload.get("child"):
                job.chain("limited", {"child": True})  # needs brooq_producer
            return "ok"

        with running(worker):
            job_id = enqueue_sql(conn, "limited")
            assert wait_for(lambda: settled(conn, job_id)).state == "done"
            wait_for(lambda: worker.snapshot().done == 2, what="the chained job")
    finally:
        conn.execute(f"drop role {role}")


def test_a_role_without_worker_rights_stops_the_worker(db: str, conn: Conn) -> None:
    role = f"brooq_test_nobody_{conn.info.backend_pid}"
    conn.execute(f"create role {role} login")
    try:
        brooq.declare_topic(conn, "forbidden")
        worker = brooq.Worker(psycopg.conninfo.make_conninfo(db, user=role), **FAST)

        @worker.handler("forbidden")
        def forbidden(job: brooq.Job) -> None:
            return None

        started = time.monotonic()
        with pytest.raises(brooq.PermissionDenied):
            worker.run()
        assert time.monotonic() - started < 5
    finally:
        conn.execute(f"drop role {role}")


def test_a_result_the_database_refuses_fails_only_its_own_attempt(db: str, conn: Conn) -> None:
    worker = brooq.Worker(db, concurrency=4, **FAST)
    gate = threading.Barrier(4, timeout=5)

    @worker.handler("text", max_attempts=1)
    def text(job: brooq.Job) -> str:
        gate.wait()  # finish together: one settle_many for the four
        return "nul \u0000 inside" if job.payload["bad"] else "fine"

    with running(worker):
        jobs = brooq.enqueue_many(conn, "text", [{"bad": i == 2} for i in range(4)])
        fates = [wait_for(lambda j=j: settled(conn, j.id)) for j in jobs]
    assert [f.state for f in fates] == ["done", "done", "dead", "done"]
    assert fates[2].last_error is not None
    assert fates[2].last_error.startswith("cannot settle done: UntranslatableCharacter")


def test_a_result_above_the_topics_limit_fails_only_its_own_attempt(db: str, conn: Conn) -> None:
    worker = brooq.Worker(db, concurrency=3, **FAST)
    gate = threading.Barrier(3, timeout=5)

    @worker.handler("big", max_attempts=1)
    def big(job: brooq.Job) -> dict[str, str]:
        gate.wait()  # finish together: one settle_many for the three
        return {"blob": "x" * (2 << 20)} if job.payload["big"] else {"ok": "yes"}

    with running(worker):
        jobs = brooq.enqueue_many(conn, "big", [{"big": i == 1} for i in range(3)])
        fates = [wait_for(lambda j=j: settled(conn, j.id)) for j in jobs]
    assert [f.state for f in fates] == ["done", "dead", "done"]
    assert fates[1].result is None and fates[1].last_error is not None
    assert fates[1].last_error.startswith(
        f"cannot settle done: ProgramLimitExceeded: result of job {jobs[1].id} is 2097164 bytes, "
        "larger than the 1048576 bytes allowed")


def test_an_unreachable_database_at_start_stops_the_worker_with_start_timeout_0() -> None:
    """start_timeout 0: a worker that never connected does not wait for a server that is
    not up (waiting: test_worker_processes.py; a lost connection after the first one is
    retried: test_worker_messages.py)."""
    from pgcluster import free_port

    worker = brooq.Worker(f"postgresql://postgres@127.0.0.1:{free_port()}/nowhere",
                          start_timeout=timedelta(0), **FAST)

    @worker.handler("never")
    def never(job: brooq.Job) -> None:
        return None

    started = time.monotonic()
    with pytest.raises(brooq.ConnectError, match="cannot connect to the database.*hint: check the DSN"):
        worker.run()
    assert time.monotonic() - started < 5
    assert not worker.snapshot().connected


def test_a_server_not_up_at_start_is_waited_for_start_timeout_then_named(
        caplog: pytest.LogCaptureFixture) -> None:
    from pgcluster import free_port

    worker = brooq.Worker(f"postgresql://postgres@127.0.0.1:{free_port()}/nowhere",
                          start_timeout=timedelta(seconds=0.6), **FAST)

    @worker.handler("never")
    def never(job: brooq.Job) -> None:
        return None

    started = time.monotonic()
    with pytest.raises(brooq.ConnectError, match="Connection refused.*still unreachable after "
                                                 "start_timeout 600ms"):
        worker.run()
    assert 0.6 <= time.monotonic() - started < 5
    waiting = [r for r in caplog.records if "cannot connect to the database yet" in r.getMessage()]
    assert len(waiting) == 1 and waiting[0].levelname == "WARNING", caplog.text


@pytest.mark.parametrize(("error", "waited"), [
    ('connection failed: connection to server at "127.0.0.1", port 1 failed: Connection refused', True),
    ('connection is bad: connection to server on socket "/run/x/.s.PGSQL.5432" failed: '
     "No such file or directory", True),
    ('connection failed: connection to server at "10.0.0.1", port 5432 failed: FATAL:  '
     "the database system is starting up", True),
    ("connection failed: connection to server at \"h\", port 5432 failed: timeout expired", True),
    ("failed to resolve host 'db': [Errno -3] Temporary failure in name resolution", True),
    ('connection failed: connection to server at "h", port 5432 failed: session is read-only', True),
    ('connection failed: connection to server at "h", port 5432 failed: FATAL:  '
     'password authentication failed for user "u"', False),
    ('connection failed: connection to server at "h", port 5432 failed: FATAL:  '
     'database "nope" does not exist', False),
    ('connection failed: connection to server at "h", port 5432 failed: FATAL:  '
     'role "nobody" does not exist', False),
    ('connection is bad: invalid sslmode value: "bogus"', False),
])
def test_which_failures_to_connect_a_starting_worker_waits_out(error: str, waited: bool) -> None:
    from brooq.session import transient

    assert transient(psycopg.OperationalError(error)) is waited
    assert not transient(psycopg.ProgrammingError('invalid connection option "foo"'))
    assert transient(psycopg.errors.ReadOnlySqlTransaction("cannot execute in a read-only transaction"))
    assert not transient(psycopg.errors.InsufficientPrivilege("permission denied"))


def test_async_handlers_see_cancellation(db: str, conn: Conn) -> None:
    worker = brooq.Worker(db, **FAST)
    seen: list[str] = []

    @worker.handler("watch", timeout=None)
    async def watch(job: brooq.Job) -> str:
        waiter = asyncio.ensure_future(job.wait_canceled())
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            seen.append(f"task canceled, flag {job.canceled.is_set()} ({job.canceled.reason})")
            await asyncio.wait_for(waiter, 1)  # the awaitable resolves too
            seen.append("wait_canceled returned")
            raise
        return "not reached"

    @worker.handler("wrapped")
    def wrapped(job: brooq.Job) -> Any:
        return watch(job)  # a coroutine from a sync handler: a mistake worth a clear error

    with running(worker):
        job_id = enqueue_sql(conn, "watch")
        wrong = enqueue_sql(conn, "wrapped")
        wait_for(lambda: worker.snapshot().topics["watch"].claimed == 1)
        time.sleep(0.2)
        brooq.cancel(conn, job_id)
        wait_for(lambda: len(seen) == 2, timeout=5, what="the async handler to stop")
        w = wait_for(lambda: settled(conn, wrong))
    assert seen == ["task canceled, flag True (lease lost)", "wait_canceled returned"]
    assert fate(conn, job_id).state == "canceled"
    assert w.last_error == "the handler returned an awaitable: declare it with async def"


def test_wrapped_signals_choose_the_outcome_like_errors_as(
        db: str, conn: Conn, caplog: pytest.LogCaptureFixture) -> None:
    """A signal raised `from` under another exception, or the context of an exception
    raised while handling it, chooses the outcome; `from None` hides it. A failure is
    logged at ERROR with its stack, a (wrapped) signal never is."""
    worker = brooq.Worker(db, **FAST)
    settings = {"backoff_base": timedelta(seconds=20), "backoff_max": timedelta(minutes=1)}
    signals: dict[str, Any] = {
        "retry": lambda: brooq.Retry(timedelta(seconds=40), reason="rate limited"),
        "preserve": lambda: brooq.PreserveAttempt(30.0, reason="not now"),
        "cancel": lambda: brooq.Cancel("not wanted"),
    }

    def explicit(make: Any) -> Any:
        def handle(job: brooq.Job) -> None:
            raise ValueError("bad response") from make()
        return handle

    def implicit(make: Any) -> Any:
        def handle(job: brooq.Job) -> None:
            try:
                raise make()
            except brooq.HandlerSignal:
                if job.payload.get("hide"):
                    raise KeyError("cleanup failed") from None
                raise KeyError("cleanup failed")  # noqa: B904 (the implicit context is the point)
        return handle

    def implicit_deep(make: Any) -> Any:
        async def handle(job: brooq.Job) -> None:  # async, and two levels down
            try:
                try:
                    raise make()
                except brooq.HandlerSignal as exc:
                    raise OSError("disk full") from exc
            except OSError:
                if job.payload.get("hide"):
                    raise RuntimeError("outer") from None
                raise RuntimeError("outer")  # noqa: B904
        return handle

    for name, make in signals.items():
        worker.handler(f"from-{name}", **settings)(explicit(make))
        worker.handler(f"context-{name}", **settings)(implicit(make))
        worker.handler(f"deep-{name}", **settings)(implicit_deep(make))

    def waits(f: brooq.JobFate) -> float:
        return (f.available_at - f.updated_at).total_seconds()

    with caplog.at_level(logging.INFO, logger="brooq.worker"), running(worker):
        ids = {t: enqueue_sql(conn, t) for t in worker.topics}
        hidden = {t: enqueue_sql(conn, t, '{"hide": true}') for t in ("context-cancel", "deep-cancel")}
        fates = {t: wait_for(lambda i=i: settled(conn, i), what=t) for t, i in ids.items()}
        hid = {t: wait_for(lambda i=i: settled(conn, i), what=t) for t, i in hidden.items()}

    outer = {"from": "ValueError: bad response", "context": "KeyError: 'cleanup failed'",
             "deep": "RuntimeError: outer"}
    for how, text in outer.items():
        r = fates[f"{how}-retry"]
        assert (r.state, r.attempts, waits(r)) == ("failed", 1, 40), (how, r)
        assert r.last_error == f"Retry: rate limited (raised as {text})"
        p = fates[f"{how}-preserve"]
        assert (p.state, p.attempts, waits(p)) == ("failed", 0, 30), (how, p)
        assert p.last_error == f"PreserveAttempt: not now (raised as {text})"
        c = fates[f"{how}-cancel"]
        assert (c.state, c.last_error) == ("canceled", f"Cancel: not wanted (raised as {text})"), how
    # `raise X from None` suppresses the context: an ordinary failure
    assert (hid["context-cancel"].state, hid["context-cancel"].last_error) == (
        "failed", "KeyError: 'cleanup failed'")
    assert (hid["deep-cancel"].state, hid["deep-cancel"].last_error) == ("failed", "RuntimeError: outer")
    errors = [r for r in caplog.records  # (the worker created the topics: a WARNING each, not these)
              if r.levelno >= logging.WARNING and "created topic" not in r.getMessage()]
    assert {r.getMessage() for r in errors} == {
        f"job {hidden['context-cancel']} (context-cancel) attempt 1/5 failed: KeyError: 'cleanup failed'",
        f"job {hidden['deep-cancel']} (deep-cancel) attempt 1/5 failed: RuntimeError: outer"}
    assert all(r.levelno == logging.ERROR and r.exc_info for r in errors)
    tracebacks = [caplog.handler.formatter.formatException(r.exc_info) for r in errors if r.exc_info]
    assert len(tracebacks) == 2 and all("in handle" in t for t in tracebacks), tracebacks


def test_find_signal_walks_the_chain_and_survives_a_cycle() -> None:
    from brooq.signals import find_signal

    retry = brooq.Retry()
    a, b = ValueError("a"), KeyError("b")
    a.__cause__, b.__cause__ = b, a  # a cycle with no signal on it
    assert find_signal(a) is None
    c = TypeError("c")
    c.__context__ = c  # a loop on itself
    assert find_signal(c) is None
    b.__cause__ = retry  # the signal under the first wrapper
    assert find_signal(a) is retry
    assert find_signal(retry) is retry


def test_a_run_keeps_what_existed_before_it_out_of_the_gcs_full_collections(db: str, conn: Conn) -> None:
    """The objects made before run() (modules, the app) are frozen (gc.freeze) for the
    run, so that a full collection walks only what the run makes (a 15-19 ms pause in
    a drain of 100,000 jobs, ~1 ms frozen: docs/performance.md); given back after it."""
    worker = brooq.Worker(db, concurrency=1, **FAST)
    before = len(gc.get_objects())
    frozen: list[int] = []

    @worker.handler("gc")
    def handler(job: brooq.Job) -> None:
        frozen.append(gc.get_freeze_count())

    worker.declare_topics()
    conn.execute("select brooq.enqueue('gc', '{}')")
    with running(worker):
        wait_for(lambda: frozen, what="the job to run")
    assert frozen[0] >= before // 2  # most of them: some die before run() starts
    assert gc.get_freeze_count() == 0


def test_worker_handlers_is_what_was_registered_and_read_only() -> None:
    """Worker.handlers: the registered handlers by topic with their settings (what
    brooq.testing.drain runs); registering goes through @worker.handler only."""
    worker = brooq.Worker("postgresql://unused", name="w")

    @worker.handler("mail", max_attempts=7)
    def mail(job: brooq.Job) -> None:
        pass

    assert list(worker.handlers) == ["mail"] and worker.handlers["mail"].fn is mail
    assert worker.handlers["mail"].settings.max_attempts == 7
    with pytest.raises(TypeError):
        worker.handlers["other"] = worker.handlers["mail"]  # type: ignore[index]
