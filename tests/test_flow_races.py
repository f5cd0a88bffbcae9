"""Flow control under concurrency (issue 14): many claimers on real connections.

max_in_flight: claimers line up on a barrier every round and claim at once, while
jobs are settled, failed for a retry, canceled, and left to expire and be reaped; a
sampler thread counts the topic's `processing` jobs all along, and every claimer
counts them again right after its claim. The rate: racing claimers for a few
seconds; every claim counted into brooq.claim_window is copied by a trigger, and
the copy is checked window by window. The figures are printed (`-s` shows them).
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Sequence
from typing import Any

import psycopg
import pytest
from test_sql_races import Conn, claim, declare, enqueue_n, race, reap, settle


class Sampler(threading.Thread):
    """Counts the jobs of `topic` in `processing`, as often as it can, until stopped."""

    def __init__(self, dsn: str, topic: str) -> None:
        super().__init__(daemon=True)
        self.dsn, self.topic = dsn, topic
        self.samples = 0
        self.max_seen = 0
        self.halt = threading.Event()

    def run(self) -> None:
        with psycopg.connect(self.dsn, autocommit=True) as c:
            while not self.halt.is_set():
                row = c.execute("select count(*) from brooq.job where topic = %s and state = 'processing'",
                                (self.topic,)).fetchone()
                assert row is not None
                self.samples += 1
                self.max_seen = max(self.max_seen, row[0])

    def __enter__(self) -> Sampler:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.halt.set()
        self.join(timeout=10)


def processing(c: Conn, topic: str) -> int:
    row = c.execute("select count(*) from brooq.job where topic = %s and state = 'processing'",
                    (topic,)).fetchone()
    assert row is not None
    return int(row[0])


# max_in_flight --------------------------------------------------------------------

@pytest.mark.parametrize("limit", [1, 4])
def test_max_in_flight_holds_while_claims_race_settles_reaps_and_cancels(db: str, conn: Conn,
                                                                         limit: int) -> None:
    declare(conn, "flow", max_in_flight=limit)
    enqueue_n(conn, "flow", 2000)
    n, rounds = 12, 40

    def claimer(i: int, c: Conn, barrier: Any) -> tuple[int, int]:
        rng = random.Random(i)
        claims, seen = 0, 0
        for _ in range(rounds):
            barrier.wait()
            got = claim(c, f"w{i}", ["flow"], rng.randint(1, 5), lease="150 milliseconds")
            claims += len(got)
            seen = max(seen, processing(c, "flow"))
            for job, token in got:
                action = rng.random()
                if action < 0.5:
                    settle(c, job, f"w{i}", token, "done")
                elif action < 0.65:
                    c.execute("select brooq.settle(%s, %s, %s, 'failed', error => 'retry', delay => '0 s')",
                              (job, f"w{i}", token))
                elif action < 0.75:
                    c.execute("select brooq.cancel(%s)", (job,))
                # else: kept until its lease expires, then reaped by somebody
            if rng.random() < 0.3:
                time.sleep(0.05)
                reap(c)
        return claims, seen

    with Sampler(db, "flow") as sampler:
        results = race(db, n, claimer)
    claims = sum(r[0] for r in results)
    seen = max(max(r[1] for r in results), sampler.max_seen)
    print(f"\nmax_in_flight {limit}: {n} claimers x {rounds} rounds, {claims} jobs claimed, "
          f"{sampler.samples} samples; max observed in flight {seen} (limit {limit})")
    assert claims >= rounds // 2, "the claimers hardly claimed anything: the test proves nothing"
    assert seen <= limit, f"{seen} jobs processing at once, above max_in_flight {limit}"
    assert sampler.samples > 100


def test_a_flow_limited_topic_is_refused_outside_read_committed(conn: Conn) -> None:
    """Under REPEATABLE READ, the claim's snapshot would predate the lock it waits for."""
    declare(conn, "flow", max_in_flight=2)
    declare(conn, "free")
    enqueue_n(conn, "flow", 1)
    enqueue_n(conn, "free", 1)
    conn.autocommit = False
    try:
        conn.execute("set transaction isolation level repeatable read")
        with pytest.raises(psycopg.errors.InvalidTransactionState,
                           match='cannot claim from flow-limited topic "flow" in a REPEATABLE READ transaction'):
            conn.execute("select * from brooq.claim('w', array['flow'])")
        conn.rollback()
        conn.execute("set transaction isolation level repeatable read")
        assert len(conn.execute("select * from brooq.claim('w', array['free'])").fetchall()) == 1, \
            "a topic without limits is claimed in any isolation level, as before"
        conn.rollback()
    finally:
        conn.autocommit = True
    assert len(claim(conn, "w", ["flow"], 5)) == 1


# rate -----------------------------------------------------------------------------

def window_violations(rows: Sequence[tuple[float, int]], rate: int, per: float) -> list[tuple[float, int]]:
    """(instant, jobs in the window ending there) of every window of `per` seconds,
    ending at a claim, that holds more than `rate` jobs."""
    bad = []
    for t, _ in rows:
        inside = sum(n for u, n in rows if t - per < u <= t)
        if inside > rate:
            bad.append((t, inside))
    return bad


def test_rate_holds_in_every_window_while_claims_race(db: str, conn: Conn) -> None:
    rate, per = 25, 0.2
    declare(conn, "flow", rate=rate, per=f"{per} seconds")
    enqueue_n(conn, "flow", 3000)
    conn.execute("""
        create table public.window_audit (claimed_at timestamptz, jobs integer);
        create function public.audit_window() returns trigger language plpgsql as $$
        begin insert into public.window_audit values (new.claimed_at, new.jobs); return new; end $$;
        create trigger audit after insert on brooq.claim_window
           for each row execute function public.audit_window();""")
    seconds, n = 2.0, 10

    def claimer(i: int, c: Conn, barrier: Any) -> int:
        rng = random.Random(i)
        barrier.wait()
        claims = 0
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            claims += len(claim(c, f"w{i}", ["flow"], rng.randint(1, 8)))
        return claims

    started = time.monotonic()
    claims = sum(race(db, n, claimer))
    elapsed = time.monotonic() - started
    rows = [(r[0], r[1]) for r in conn.execute(
        "select extract(epoch from claimed_at)::float8, jobs from public.window_audit order by 1").fetchall()]
    bad = window_violations(rows, rate, per)
    print(f"\nrate {rate} per {per}s: {n} claimers for {elapsed:.1f}s, {claims} jobs claimed in "
          f"{len(rows)} claims; at most {max(sum(m for u, m in rows if t - per < u <= t) for t, _ in rows)} "
          f"in a window; {len(bad)} windows above the rate")
    assert sum(j for _, j in rows) == claims, "every claimed job is counted in the window"
    assert bad == []
    # and not throttled far below the rate: the windows did fill up
    assert claims >= rate * (elapsed / per) * 0.5
    assert claims <= rate * (elapsed / per + 1)
