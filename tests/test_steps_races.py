"""Durable steps under races (docs/architecture.md, "Durable steps"): an event emitted
while its job starts waiting is received exactly once, whichever side commits first;
a producer holding an emit open stalls no worker; a huge payload fails no claim."""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from typing import Any

import psycopg
from helpers import declare

ROUNDS = 40


def _claim(conn: psycopg.Connection[Any], topic: str, worker: str = "w") -> tuple[int, int] | None:
    row = conn.execute("select id, lease_token from brooq.claim(%s, array[%s], 1, '1 minute')",
                       (worker, topic)).fetchone()
    return None if row is None else (row[0], row[1])


def test_an_event_emitted_while_its_job_starts_waiting_wakes_it_exactly_once(db: str) -> None:
    rng = random.Random(7)
    how: Counter[str] = Counter()
    orders: Counter[str] = Counter()
    with psycopg.connect(db, autocommit=True) as conn, \
            psycopg.connect(db) as waiter, psycopg.connect(db) as producer:
        declare(conn, "race.ev")
        for n in range(ROUNDS):
            event = f"ev:{n}"
            job_id = conn.execute("select id from brooq.enqueue('race.ev', %s::jsonb)", (f'{{"n": {n}}}',)).fetchone()[0]
            claimed = _claim(conn, "race.ev")
            assert claimed is not None and claimed[0] == job_id
            token = claimed[1]
            barrier = threading.Barrier(2)
            waiter_first = n % 2 == 0  # each side starts first in half the rounds
            answer: dict[str, Any] = {}

            def wait(job_id: int = job_id, token: int = token, event: str = event,
                     waiter_first: bool = waiter_first, barrier: threading.Barrier = barrier,
                     answer: dict[str, Any] = answer) -> None:
                barrier.wait()
                if not waiter_first:
                    time.sleep(0.002)
                row = waiter.execute(
                    "select outcome, payload from brooq.wait_for_event('w', %s, %s, 'pay', %s, '1 hour')",
                    (job_id, token, event)).fetchone()
                answer["wait"] = row
                answer["wait_at"] = time.perf_counter()
                time.sleep(rng.uniform(0, 0.010))
                waiter.commit()

            def emit(event: str = event, n: int = n, waiter_first: bool = waiter_first,
                     barrier: threading.Barrier = barrier, answer: dict[str, Any] = answer) -> None:
                barrier.wait()
                if waiter_first:
                    time.sleep(0.002)
                row = producer.execute("select id, woken from brooq.emit_event(%s, %s::jsonb)",
                                       (event, f'{{"paid": {n}}}')).fetchone()
                answer["emit"] = row
                answer["emit_at"] = time.perf_counter()
                time.sleep(rng.uniform(0, 0.010))
                producer.commit()

            threads = [threading.Thread(target=wait), threading.Thread(target=emit)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(10)
            orders["wait first" if answer["wait_at"] < answer["emit_at"] else "emit first"] += 1
            outcome, payload = answer["wait"]
            if outcome == "received":
                how["received at the wait"] += 1
                assert payload == {"paid": n}
            else:
                assert outcome == "waiting"
                ready = conn.execute("select available_at <= clock_timestamp() from brooq.job where id = %s",
                                     (job_id,)).fetchone()[0]
                if ready:
                    how["woken by the emit or the wait's second look"] += 1
                else:
                    conn.execute("select brooq.reap()")
                    how["woken by reap"] += 1
                claimed = _claim(conn, "race.ev")
                assert claimed is not None and claimed[0] == job_id, f"round {n}: the job was not woken"
                assert _claim(conn, "race.ev", "w2") is None  # woken once: nothing more to claim
                token = claimed[1]
                again = conn.execute(
                    "select outcome, payload from brooq.wait_for_event('w', %s, %s, 'pay', %s, '1 hour')",
                    (job_id, token, event)).fetchone()
                assert again == ("received", {"paid": n}), f"round {n}: {again}"
            assert conn.execute("select brooq.settle(%s, 'w', %s, 'done')", (job_id, token)).fetchone()[0] == "done"
            steps = conn.execute("select kind, event_id, attempt from brooq.job_step where job_id = %s",
                                 (job_id,)).fetchall()
            assert steps == [("event", answer["emit"][0], 1)], f"round {n}: {steps}"  # received exactly once
            assert conn.execute("select attempts from brooq.job where id = %s", (job_id,)).fetchone()[0] == 1
        assert conn.execute("select count(*) from brooq.job_wait").fetchone()[0] == 0
    assert sum(how.values()) == ROUNDS
    assert orders["wait first"] > 0 and orders["emit first"] > 0, orders
    print(dict(how), dict(orders))


def test_a_producer_holding_an_emit_open_stalls_no_worker(db: str) -> None:
    with psycopg.connect(db, autocommit=True) as conn, psycopg.connect(db) as producer:
        declare(conn, "race.hold")
        ids = [conn.execute("select id from brooq.enqueue('race.hold', '{}')").fetchone()[0] for _ in range(4)]
        waiting = _claim(conn, "race.hold")
        assert waiting is not None
        assert conn.execute("select outcome from brooq.wait_for_event('w', %s, %s, 's', 'held', '1 second')",
                            waiting).fetchone()[0] == "waiting"
        # the producer emits (locking the waiter's row) and keeps its transaction open
        assert producer.execute("select woken from brooq.emit_event('held')").fetchone()[0] == 1
        try:
            conn.execute("set statement_timeout = '2s'")  # a stalled call fails the test
            time.sleep(1.1)  # the waiter's deadline has passed: claim would take it, it is locked
            other = _claim(conn, "race.hold")
            assert other is not None and other[0] != waiting[0]  # skipped, not waited for
            assert conn.execute("select count(*) from brooq.heartbeat('w', array[%s]::bigint[], '1 minute', "
                                "array[%s]::bigint[])", other).fetchone()[0] == 1
            assert conn.execute("select created from brooq.checkpoint('w', %s, %s, 'c', '1')",
                                other).fetchone()[0] is True
            assert conn.execute("select outcome from brooq.wait_for_event('w', %s, %s, 's', 'held', '1 hour')",
                                other).fetchone()[0] == "waiting"  # the held event is not committed
            conn.execute("select brooq.reap()")
            third = _claim(conn, "race.hold")
            assert third is not None
            assert conn.execute("select brooq.settle(%s, 'w', %s, 'done')", third).fetchone()[0] == "done"
        finally:
            producer.rollback()
        assert set(ids) >= {waiting[0]}


def test_a_huge_payload_fails_no_claim(db: str) -> None:
    with psycopg.connect(db, autocommit=True) as conn:
        declare(conn, "race.huge")
        jobs = []
        for _ in range(3):
            conn.execute("select id from brooq.enqueue('race.huge', '{}')")
            claimed = _claim(conn, "race.huge")
            assert claimed is not None
            conn.execute("select brooq.wait_for_event('w', %s, %s, 's', 'huge', '1 hour')", claimed)
            jobs.append(claimed[0])
        huge = '{"blob": "' + "x" * 1_048_000 + '", "odd": [null, "\\u00e9x", 1e308, {"": []}]}'
        conn.execute("select brooq.emit_event('huge', %s::jsonb)", (huge,))
        got = conn.execute("select id, lease_token from brooq.claim('w', array['race.huge'], 10, '1 minute')").fetchall()
        assert sorted(r[0] for r in got) == sorted(jobs)  # the claim carries no payload of an event
        for job_id, token in got:
            row = conn.execute("select outcome, octet_length(payload::text) from brooq.wait_for_event("
                               "'w', %s, %s, 's', 'huge', '1 hour')", (job_id, token)).fetchone()
            assert row[0] == "received" and row[1] > 1_048_000
