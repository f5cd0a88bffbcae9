"""Durable steps with a real worker (docs/python-guide.md, "Durable steps"): job.step runs
its function once across retries and lease losses, job.sleep ends the attempt unspent
and resumes after it, job.wait_for_event is woken by an emit (one before the wait too)
or times out, a canceled job never resumes, async handlers likewise. The SQL rules are in
tests/pgtap/steps.sql, the emit/wait race in tests/test_steps_races.py."""

from __future__ import annotations

import asyncio
import json
import threading
from datetime import timedelta
from typing import Any

import brooq
import psycopg
import pytest
from brooq.durable import StepStore
from helpers import FAST, brooq_cli, declare, running, wait_for


def _state(conn: psycopg.Connection[Any], job_id: int) -> str:
    return brooq.get_job(conn, job_id).state


def test_a_step_runs_once_across_retries_and_its_result_comes_back(db: str) -> None:
    calls: dict[str, int] = {"charge": 0, "reserve": 0}
    lock = threading.Lock()
    worker = brooq.Worker(db, concurrency=2, **FAST)

    @worker.handler("st.checkout", max_attempts=3, backoff_base=timedelta(milliseconds=10))
    def checkout(job: brooq.Job) -> dict[str, Any]:
        def charge() -> dict[str, str]:
            with lock:
                calls["charge"] += 1
            return {"charge": f"ch_{job.payload['order']}"}

        def reserve() -> int:
            with lock:
                calls["reserve"] += 1
            if job.attempt < 2:
                raise RuntimeError("the warehouse is down")
            return 7

        receipt = job.step("charge", charge)
        seat = job.step("reserve", reserve)
        return {"receipt": receipt, "seat": seat}

    with psycopg.connect(db, autocommit=True) as conn:
        declare(conn, "st.checkout")
        job = brooq.enqueue(conn, "st.checkout", {"order": 42})
        with running(worker):
            wait_for(lambda: _state(conn, job.id) == "done", what="the checkout to finish")
        fate = brooq.get_job(conn, job.id)
        assert fate.result == {"receipt": {"charge": "ch_42"}, "seat": 7}
        assert fate.attempts == 2
        assert calls == {"charge": 1, "reserve": 2}  # the charge ran once, its result came back
        steps = brooq.steps(conn, job.id)
        assert [(s.name, s.kind, s.result, s.attempt) for s in steps] == [
            ("charge", "step", {"charge": "ch_42"}, 1), ("reserve", "step", 7, 2)]
        assert [s.name for s in brooq.steps(conn, job.id, max_steps=1)] == ["charge"]
    # brooq job: the steps on its line, and every one of them with --json
    line = brooq_cli("job", str(job.id), dsn=db)
    assert line.returncode == 0 and " steps=charge,reserve" in line.stdout, line
    shown = json.loads(brooq_cli("job", str(job.id), "--json", dsn=db).stdout)["steps"]
    assert [(s["name"], s["kind"], s["result"]) for s in shown] == [
        ("charge", "step", {"charge": "ch_42"}), ("reserve", "step", 7)]


def test_a_sleep_ends_the_attempt_unspent_and_resumes_after_it(db: str) -> None:
    runs: list[int] = []
    worker = brooq.Worker(db, **FAST)

    @worker.handler("st.sleep", max_attempts=1)
    def nap(job: brooq.Job) -> str:
        runs.append(job.attempt)
        job.step("before", lambda: "x")
        job.sleep(for_=timedelta(milliseconds=500))
        return "woke"

    with psycopg.connect(db, autocommit=True) as conn:
        declare(conn, "st.sleep")
        job = brooq.enqueue(conn, "st.sleep", {})
        with running(worker):
            wait_for(lambda: _state(conn, job.id) == "done", what="the sleeper to finish")
            snapshot = worker.snapshot().topics["st.sleep"]
        fate = brooq.get_job(conn, job.id)
        # max_attempts 1: had the sleep spent the attempt, the job could not run again
        assert (fate.result, fate.attempts, runs) == ("woke", 1, [1, 1])
        assert snapshot.lease_lost == 0 and snapshot.retried == 1
        assert [(s.name, s.kind) for s in brooq.steps(conn, job.id)] == [("before", "step"), ("sleep#1", "sleep")]


def test_a_wait_is_woken_by_an_emit_and_receives_the_payload(db: str) -> None:
    worker = brooq.Worker(db, **FAST)

    @worker.handler("st.wait")
    def pay(job: brooq.Job) -> Any:
        return job.wait_for_event(f"paid:{job.payload['order']}", timeout=timedelta(hours=1))

    with psycopg.connect(db, autocommit=True) as conn:
        declare(conn, "st.wait")
        job = brooq.enqueue(conn, "st.wait", {"order": 7})
        with running(worker):
            wait_for(lambda: any(s.kind == "waiting" for s in brooq.steps(conn, job.id)),
                     what="the job to wait")
            assert _state(conn, job.id) == "pending"  # no worker holds it
            with conn.transaction():  # the producer's own transaction
                emitted = brooq.emit_event(conn, "paid:7", {"amount": 5})
            assert emitted.woken == 1
            wait_for(lambda: _state(conn, job.id) == "done", what="the waiter to finish")
        assert brooq.get_job(conn, job.id).result == {"amount": 5}


def test_an_event_emitted_before_the_wait_is_received_at_once(db: str) -> None:
    worker = brooq.Worker(db, **FAST)

    @worker.handler("st.early")
    def early(job: brooq.Job) -> Any:
        return job.wait_for_event("ready", timeout=timedelta(hours=1))

    with psycopg.connect(db, autocommit=True) as conn:
        declare(conn, "st.early")
        brooq.emit_event(conn, "ready", "go", keep=timedelta(minutes=5))
        job = brooq.enqueue(conn, "st.early", {})
        with running(worker):
            wait_for(lambda: _state(conn, job.id) == "done", what="the job to finish")
        fate = brooq.get_job(conn, job.id)
        assert (fate.result, fate.attempts) == ("go", 1)


def test_a_wait_times_out(db: str) -> None:
    worker = brooq.Worker(db, **FAST)

    @worker.handler("st.timeout")
    def patient(job: brooq.Job) -> str:
        try:
            job.wait_for_event("never", timeout=timedelta(milliseconds=300), step="approval")
        except brooq.EventTimeout:
            return "gave up"
        return "approved"

    with psycopg.connect(db, autocommit=True) as conn:
        declare(conn, "st.timeout")
        job = brooq.enqueue(conn, "st.timeout", {})
        with running(worker):
            wait_for(lambda: _state(conn, job.id) == "done", what="the wait to time out")
        assert brooq.get_job(conn, job.id).result == "gave up"
        assert [(s.name, s.kind) for s in brooq.steps(conn, job.id)] == [("approval", "timeout")]


def test_a_canceled_waiting_job_never_resumes(db: str) -> None:
    runs: list[int] = []
    worker = brooq.Worker(db, **FAST)

    @worker.handler("st.cancel")
    def waits(job: brooq.Job) -> Any:
        runs.append(job.id)
        return job.wait_for_event("go:cancel", timeout=timedelta(hours=1))

    with psycopg.connect(db, autocommit=True) as conn:
        declare(conn, "st.cancel")
        job = brooq.enqueue(conn, "st.cancel", {})
        with running(worker):
            wait_for(lambda: any(s.kind == "waiting" for s in brooq.steps(conn, job.id)),
                     what="the job to wait")
            assert brooq.cancel(conn, job.id)
            assert brooq.emit_event(conn, "go:cancel").woken == 0
            worker_runs = len(runs)
            conn.execute("select pg_sleep(0.5)")
            assert len(runs) == worker_runs == 1
        assert _state(conn, job.id) == "canceled"


def test_async_handlers_step_sleep_and_wait(db: str) -> None:
    calls: list[str] = []
    worker = brooq.Worker(db, **FAST)

    @worker.handler("st.async")
    async def flow(job: brooq.Job) -> Any:
        async def charge() -> str:
            calls.append("charge")
            await asyncio.sleep(0)
            return "ch_1"

        receipt = await job.step_async("charge", charge)
        await job.sleep_async(for_=0.2)
        payload = await job.wait_for_event_async("async:go", timeout=timedelta(hours=1))
        return [receipt, payload]

    with psycopg.connect(db, autocommit=True) as conn:
        declare(conn, "st.async")
        job = brooq.enqueue(conn, "st.async", {})
        with running(worker):
            wait_for(lambda: any(s.kind == "waiting" for s in brooq.steps(conn, job.id)),
                     what="the job to wait")
            brooq.emit_event(conn, "async:go", 1)
            wait_for(lambda: _state(conn, job.id) == "done", what="the job to finish")
        assert brooq.get_job(conn, job.id).result == ["ch_1", 1]
        assert calls == ["charge"]


def test_a_step_of_a_job_no_longer_held_is_refused(db: str) -> None:
    with psycopg.connect(db, autocommit=True) as conn:
        declare(conn, "st.fenced")
        job_id = brooq.enqueue(conn, "st.fenced", {}).id
        row = conn.execute("select id, lease_token from brooq.claim('w', array['st.fenced'])").fetchone()
        assert row is not None
        brooq.cancel(conn, job_id)
        store = StepStore("w", lambda: psycopg.connect(db, autocommit=True))
        job = brooq.Job(job_id, "st.fenced", {}, 1, 5, 0, row[1], brooq.get_job(conn, job_id).created_at)
        job._store = store
        ran: list[int] = []
        with pytest.raises(brooq.StepLeaseLost):
            job.step("charge", lambda: ran.append(1))
        assert ran == [1] and brooq.steps(conn, job_id) == []  # ran (as a zombie would), nothing stored
        store.close()


def test_emit_event_needs_a_producer_and_refuses_bad_values(db: str) -> None:
    with psycopg.connect(db, autocommit=True) as conn:
        with pytest.raises(brooq.InvalidArgument) as bad:
            brooq.emit_event(conn, "")
        assert bad.value.sqlstate == "22023"
        with pytest.raises(brooq.PayloadTooLarge):
            brooq.emit_event(conn, "big", "x" * 1_100_000)
        conn.execute("create role st_stranger login")
        try:
            with psycopg.connect(db.replace("user=postgres", "user=st_stranger"), autocommit=True) as stranger, \
                    pytest.raises(brooq.PermissionDenied):
                brooq.emit_event(stranger, "x")
        finally:
            conn.execute("drop owned by st_stranger")
            conn.execute("drop role st_stranger")
