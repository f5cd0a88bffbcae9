"""The worker's parts below its loop, each driven by hand on a real connection, without a
worker thread: the settler (outbox, settle_many, chained jobs, one-by-one fallback, counting), the
leases (heartbeat, losing a lease) and the listener (NOTIFY wake-ups)."""

from __future__ import annotations

import contextlib
import time
from datetime import timedelta
from typing import Any

import brooq
import psycopg
import pytest
from brooq import queries
from brooq.attempt import Attempt, TopicHandler
from brooq.counters import Counters
from brooq.job import Chained, Job
from brooq.leases import Leases
from brooq.listener import Listener
from brooq.outcome import Outcome
from brooq.rows import fields_row
from brooq.settings import TopicSettings
from brooq.settler import Settler, answered
from helpers import fate
from psycopg.rows import scalar_row

Conn = psycopg.Connection[Any]
WORKER = "parts"


def handler(topic: str) -> TopicHandler:
    return TopicHandler(topic, lambda job: None, False, None,
                        TopicSettings(max_attempts=3, retention=timedelta(days=1)))


def claim(conn: Conn, topic: str, n: int) -> list[Attempt]:
    """Enqueue n jobs and claim them as WORKER: one attempt each."""
    brooq.declare_topic(conn, topic, max_attempts=3)
    brooq.enqueue_many(conn, topic, [{"n": i} for i in range(n)])
    jobs = conn.cursor(row_factory=fields_row(Job)).execute(
        queries.CLAIM, [WORKER, [topic], n, timedelta(seconds=30)]).fetchall()
    assert len(jobs) == n
    return [Attempt(job, handler(topic)) for job in jobs]


def settle(settler: Settler, conn: Conn) -> None:
    """What the settle thread does with the outbox, here on ``conn`` and this thread: take
    it, write it, count what the database answered."""
    batch = settler.take()
    states: dict[int, str | None] = {}
    settler.write(conn, batch, states)
    written, unwritten = answered(batch, states)
    assert unwritten == []
    settler.settled(written, states)


class Released(list[Attempt]):
    def __call__(self, attempt: Attempt) -> None:
        self.append(attempt)


# --- the settler ---------------------------------------------------------------------


def test_the_settler_writes_every_outcome_in_one_batch_and_counts_it(conn: Conn) -> None:
    done, failed, retried, canceled, stolen = claim(conn, "t.settle", 5)
    brooq.cancel(conn, stolen.job.id)  # the lease is gone: nothing may be written for it
    counters = Counters()
    counters.add_topic("t.settle")
    released = Released()
    settler = Settler(WORKER, counters, release=released)
    settler.add(done, Outcome("done", result='{"ok": true}'))
    settler.add(failed, Outcome("failed", "ValueError: no"))
    settler.add(retried, Outcome("delay", "Retry: later", timedelta(seconds=30)))
    settler.add(canceled, Outcome("cancel", "Cancel: enough"))
    settler.add(stolen, Outcome("done"))
    assert len(settler) == 5

    settle(settler, conn)

    assert len(settler) == 0
    assert released == [done, failed, retried, canceled, stolen]
    assert (fate(conn, done.job.id).state, fate(conn, done.job.id).result) == ("done", {"ok": True})
    assert fate(conn, failed.job.id).state == "failed"
    assert fate(conn, retried.job.id).last_error == "Retry: later"
    assert fate(conn, canceled.job.id).state == "canceled"
    assert fate(conn, stolen.job.id).result is None  # canceled from outside, never settled done
    snap = counters.topics["t.settle"].snapshot()
    assert (snap.done, snap.failed, snap.retried, snap.canceled, snap.lease_lost) == (1, 1, 1, 1, 1)


def test_a_value_the_database_refuses_fails_that_attempt_alone(conn: Conn) -> None:
    good, bad = claim(conn, "t.fallback", 2)
    counters = Counters()
    counters.add_topic("t.fallback")
    settler = Settler(WORKER, counters, release=Released())
    settler.add(good, Outcome("done"))
    settler.add(bad, Outcome("done", result="not json"))  # settle_many refuses the whole batch

    settle(settler, conn)  # ... so the settler goes one by one

    assert fate(conn, good.job.id).state == "done"
    bad_fate = fate(conn, bad.job.id)
    assert bad_fate.state == "failed" and "cannot settle done" in (bad_fate.last_error or "")
    assert counters.topics["t.fallback"].settled["done"] == 1
    assert counters.topics["t.fallback"].settled["failed"] == 1


def test_chained_jobs_are_enqueued_with_done_and_never_without_it(conn: Conn) -> None:
    brooq.declare_topic(conn, "t.next")
    parent, lost = claim(conn, "t.chain", 2)
    brooq.cancel(conn, lost.job.id)
    settler = Settler(WORKER, _counters("t.chain"), release=Released())
    settler.add(parent, Outcome("done"), [Chained("t.next", {"from": parent.job.id})])
    settler.add(lost, Outcome("done"), [Chained("t.next", {"from": lost.job.id})])

    settle(settler, conn)

    assert fate(conn, parent.job.id).state == "done"
    payloads = conn.cursor(row_factory=scalar_row).execute(
        "select payload from brooq.jobs where topic = 't.next'").fetchall()
    assert payloads == [{"from": parent.job.id}]  # the lost one's chain was rolled back


def test_a_claim_commits_without_waiting_for_its_wal_flush_and_a_settle_waits(conn: Conn) -> None:
    """The claim's transaction alone runs with synchronous_commit off (queries.CLAIM);
    a settle's, in a transaction of its own, keeps the session's setting."""
    conn.execute("set synchronous_commit = on")  # the test cluster runs with it off
    with conn.transaction():
        (att,) = claim(conn, "t.durable", 1)
        assert conn.execute("show synchronous_commit").fetchone() == ("off",)
    assert conn.execute("show synchronous_commit").fetchone() == ("on",)  # is_local: gone at commit
    settler = Settler(WORKER, _counters("t.durable"), release=Released())
    settler.add(att, Outcome("done"))
    with conn.transaction():
        settle(settler, conn)
        assert conn.execute("show synchronous_commit").fetchone() == ("on",)
    assert fate(conn, att.job.id).state == "done"


def test_the_settle_thread_writes_on_its_own_connection_and_the_loop_counts(db: str, conn: Conn) -> None:
    from brooq.settler import SettleThread

    attempts = claim(conn, "t.thread", 3)
    counters = _counters("t.thread")
    released = Released()
    settler = Settler(WORKER, counters, release=released)
    woken: list[int] = []
    pids: list[int] = []

    def connect() -> Conn:
        c = psycopg.connect(db, autocommit=True)
        pids.append(c.info.backend_pid)
        return c

    thread = SettleThread(settler, connect, lambda: woken.append(1), lambda c: contextlib.nullcontext())
    thread.start("parts")
    try:
        for att in attempts[:2]:
            settler.add(att, Outcome("done"))
        thread.hand(settler.take())
        assert thread.in_flight == 2 and all(a.settling for a in attempts[:2])
        thread.wait(10.0)
        assert thread.in_flight == 0 and woken
        assert counters.topics["t.thread"].settled["done"] == 2 and released == attempts[:2]
        # the connection is lost between two batches: the next batch reconnects
        conn.execute("select pg_terminate_backend(%s)", [pids[-1]])
        settler.add(attempts[2], Outcome("failed", "ValueError: no"))
        thread.hand(settler.take())
        thread.wait(10.0)
        assert thread.in_flight == 0 and len(pids) == 2 and conn.info.backend_pid not in pids
    finally:
        thread.stop()
    assert [fate(conn, a.job.id).state for a in attempts] == ["done", "done", "failed"]


def test_a_dropped_outcome_is_never_written(conn: Conn) -> None:
    (att,) = claim(conn, "t.drop", 1)
    settler = Settler(WORKER, _counters("t.drop"), release=Released())
    settler.add(att, Outcome("done"))
    settler.drop(att)
    settle(settler, conn)
    assert fate(conn, att.job.id).state == "processing"


def _counters(topic: str) -> Counters:
    counters = Counters()
    counters.add_topic(topic)
    return counters


# --- the leases ----------------------------------------------------------------------


def test_a_heartbeat_keeps_held_leases_and_loses_a_canceled_one(conn: Conn) -> None:
    kept, canceled = claim(conn, "t.lease", 2)
    counters = _counters("t.lease")
    lost: list[tuple[Attempt, float]] = []
    leases = Leases(WORKER, timedelta(seconds=60), counters,
                    on_lost=lambda att, now: lost.append((att, now)))
    leases.hold(kept, 100.0)
    leases.hold(canceled, 100.0)
    assert len(leases) == 2 and leases.next_heartbeat == 120.0  # lease / 3 after the first hold
    assert not leases.due(119.0) and leases.due(120.0)
    before = fate(conn, kept.job.id).locked_until
    brooq.cancel(conn, canceled.job.id)

    leases.heartbeat(conn, 120.0)

    assert lost == [(canceled, 120.0)] and canceled.closed and not kept.closed
    assert len(leases) == 1  # the kept one: the lost one is no longer held
    assert counters.topics["t.lease"].lease_lost == 1
    assert leases.next_heartbeat == 140.0
    after = fate(conn, kept.job.id).locked_until
    assert before is not None and after is not None and after > before  # renewed


def test_a_job_claimed_again_loses_its_older_attempt() -> None:
    counters = _counters("t.again")
    lost: list[Attempt] = []
    leases = Leases(WORKER, timedelta(seconds=30), counters, on_lost=lambda att, now: lost.append(att))
    job = Job(7, "t.again", {}, 1, 3, 0, 1, None)  # type: ignore[arg-type]
    old = Attempt(job, handler("t.again"))
    new = Attempt(Job(7, "t.again", {}, 1, 3, 0, 2, None), handler("t.again"))  # type: ignore[arg-type]
    leases.hold(old, 0.0)
    leases.hold(new, 1.0)
    assert lost == [old] and old.closed and not new.closed and len(leases) == 1
    leases.release(old)  # a late release of the old attempt leaves the new one held
    assert len(leases) == 1
    leases.release(new)
    assert len(leases) == 0


# --- the listener --------------------------------------------------------------------


def test_the_listener_wakes_for_its_topics_only(db: str, conn: Conn) -> None:
    brooq.declare_topic(conn, "t.mine")
    brooq.declare_topic(conn, "t.other")
    wakes: list[None] = []
    listener = Listener(WORKER, ["t.mine"], lambda: wakes.append(None))
    with psycopg.connect(db, autocommit=True) as listening:
        listener.listen(listening)
        assert listener.notified and len(wakes) == 1  # a notification may have been missed
        listener.notified = False
        brooq.enqueue(conn, "t.other", {})
        assert listener.receive(listening, 0.3) == 0
        assert not listener.notified and len(wakes) == 1
        brooq.enqueue(conn, "t.mine", {})
        assert listener.receive(listening, 2.0) == 1
        assert listener.notified and len(wakes) == 2


def test_empty_claims_asked_by_notifications_start_a_growing_quiet_spell() -> None:
    from brooq.listener import QUIET_MAX

    listener = Listener(WORKER, ["t.mine"], lambda: None)
    assert listener.take() and listener.claim_at(0.0) is None
    spells = []
    now = 10.0
    for _ in range(12):  # a flood: every notification's claim finds nothing
        listener.notified = True
        listener.claimed(now, found=False, notified=listener.take())
        listener.notified = True
        spells.append(round((listener.claim_at(now) or now) - now, 4))
    assert spells[:4] == [0.001, 0.002, 0.004, 0.008]
    assert max(spells) == QUIET_MAX == spells[-1]
    listener.claimed(now, found=True, notified=listener.take())  # a real job: quiet no more
    listener.notified = True
    assert listener.claim_at(now) == now
    listener.claimed(now, found=False, notified=False)  # a poll that finds nothing: no spell
    assert listener.claim_at(now) == now


@pytest.mark.parametrize("failures, seconds", [(1, 0.1), (2, 0.2), (4, 0.8), (20, 5.0)])
def test_the_listener_reconnects_with_a_bounded_backoff(failures: int, seconds: float) -> None:
    from brooq.listener import backoff

    assert backoff(failures) == pytest.approx(seconds)


@pytest.mark.parametrize("value", [
    {"seq": 1}, [1, 2.5, "é\u2603", None, True, False], "text", 12, -0.0, 1e300, None,
    {"nested": {"list": [{"a": "b\"c\\\\d"}], "big": 123456789012345678901234567890}},
])
def test_payloads_load_as_json_loads_would(conn: Conn, value: Any) -> None:
    """The worker's jsonb loader (brooq.payload.PayloadLoader) gives what json.loads gives."""
    import json

    from brooq.payload import register_loaders, to_json

    text = conn.execute("select %s::jsonb::text", [to_json(value)]).fetchone()
    assert text is not None
    with psycopg.connect(conn.info.dsn, autocommit=True) as worker_conn:
        register_loaders(worker_conn)
        loaded = worker_conn.execute("select %s::jsonb", [to_json(value)]).fetchone()
    assert loaded is not None
    assert loaded[0] == json.loads(text[0])


# --- the runner ----------------------------------------------------------------------


def test_no_part_below_the_loop_imports_the_worker() -> None:
    """The parts sit below the loop: none imports worker.py (or partitions.py, above it),
    so each is driven by hand, as in this file."""
    import ast
    from pathlib import Path

    package = Path(brooq.__file__).parent
    for part in ("runner", "session", "settler", "leases", "listener", "watchdog", "executors", "attempt"):
        imported: set[str] = set()
        for node in ast.walk(ast.parse((package / f"{part}.py").read_text())):
            if isinstance(node, ast.Import):
                imported |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module:
                imported |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
        assert not imported & {"brooq.worker", "brooq.partitions"}, part


def _runner(topic: str, fn: Any, timeout: timedelta | None = None) -> tuple[Any, Leases, Settler, Counters]:
    """A Runner for ``topic``'s handler ``fn``, with its own leases and outbox."""
    import dataclasses

    from brooq.runner import Runner

    counters = _counters(topic)
    leases = Leases(WORKER, timedelta(seconds=30), counters, on_lost=lambda att, now: runner.lost(att, now))
    outbox = Settler(WORKER, counters, release=leases.release)
    handlers = {topic: dataclasses.replace(handler(topic), fn=fn, timeout=timeout)}
    runner = Runner(WORKER, handlers, counters, leases, outbox, lambda: None, timedelta(seconds=60))
    runner.open(2)
    return runner, leases, outbox, counters


def _write(conn: Conn, outbox: Settler) -> None:
    batch = outbox.take()
    states: dict[int, str | None] = {}
    outbox.write(conn, batch, states)
    outbox.settled(batch, states)


def test_the_runner_runs_handlers_and_hands_their_outcomes_to_the_outbox(conn: Conn) -> None:
    def fn(job: Job) -> Any:
        if job.payload["n"] == 1:
            raise ValueError("no")
        return {"n": job.payload["n"]}

    runner, leases, outbox, counters = _runner("t.run", fn)
    jobs = [att.job for att in claim(conn, "t.run", 2)]
    try:
        runner.start(jobs, time.monotonic())
        assert len(runner) == 2 and len(leases) == 2
        deadline = time.monotonic() + 10
        while runner and time.monotonic() < deadline:  # the loop's part, by hand
            if runner.unconfirmed:  # a pool thread started late: its lease is confirmed first
                runner.confirm_prefetched(conn, time.monotonic())
            runner.collect(time.monotonic())
            time.sleep(0.01)
        assert not runner and len(outbox) == 2
        _write(conn, outbox)
    finally:
        runner.close(time.monotonic())
    assert (fate(conn, jobs[0].id).state, fate(conn, jobs[0].id).result) == ("done", {"n": 0})
    assert (fate(conn, jobs[1].id).state, fate(conn, jobs[1].id).last_error) == ("failed", "ValueError: no")
    assert counters.topics["t.run"].claimed == 2 and len(leases) == 0


def test_the_runner_stops_an_attempt_at_its_timeout_and_when_its_lease_is_lost(conn: Conn) -> None:
    def fn(job: Job) -> None:
        job.canceled.wait(5)  # returns once the runner tells it to stop

    runner, leases, outbox, _ = _runner("t.stop", fn, timeout=timedelta(milliseconds=200))
    slow, stolen = (att.job for att in claim(conn, "t.stop", 2))
    try:
        now = time.monotonic()
        runner.start([slow, stolen], now)
        brooq.cancel(conn, stolen.id)
        leases.heartbeat(conn, now)  # the canceled job's lease is not renewed: Runner.lost
        assert stolen.canceled.reason == "lease lost" and not slow.is_canceled()
        deadline = time.monotonic() + 10
        while not outbox and time.monotonic() < deadline:
            if runner.unconfirmed:
                runner.confirm_prefetched(conn, time.monotonic())
            runner.check(time.monotonic())
            time.sleep(0.02)
        assert slow.canceled.reason == "timeout"
        (pending,) = outbox.take()
        assert pending.attempt.job is slow and pending.outcome.outcome == "failed"
        assert (pending.outcome.error or "").startswith("timed out after")
        while runner and time.monotonic() < deadline:  # both handlers return: answers ignored
            runner.collect(time.monotonic())
            time.sleep(0.01)
        assert not runner and not outbox
    finally:
        runner.close(time.monotonic())
    assert fate(conn, stolen.id).state == "canceled"


def test_stop_signals_take_sigterm_and_sigint_for_the_block_and_give_them_back() -> None:
    import os
    import signal

    from brooq.lifecycle import stop_signals

    before = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    seen: list[int] = []
    with stop_signals(lambda: seen.append(1)):
        os.kill(os.getpid(), signal.SIGTERM)
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(100):  # Python runs the handler between two bytecodes of this thread
            if len(seen) == 2:
                break
            time.sleep(0.01)
    assert seen == [1, 1]
    assert {s: signal.getsignal(s) for s in before} == before
