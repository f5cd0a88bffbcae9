"""Flow control under concurrency: many claimers on real connections.

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
from helpers import declare, enqueue
from test_sql_races import Conn, claim, connections, race, reap, settle


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
    enqueue(conn, "flow", 2000)
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
    enqueue(conn, "flow", 1)
    enqueue(conn, "free", 1)
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

def window_violations(rows: Sequence[tuple[int, int]], rate: int, per: int) -> list[tuple[int, int]]:
    """(instant, jobs in the window ending there) of every window (t - per, t], t a
    claim, that holds more than `rate` jobs. Instants and per in whole microseconds,
    the resolution of timestamptz: exact integers, as the claim compares them (as
    float epoch seconds, 2026's instants are off by up to 1.2e-7 s, and a claim that
    left the window exactly per before t is counted in it one time in five)."""
    bad = []
    for t, _ in rows:
        inside = sum(n for u, n in rows if t - per < u <= t)
        if inside > rate:
            bad.append((t, inside))
    return bad


def test_rate_holds_in_every_window_while_claims_race(db: str, conn: Conn) -> None:
    rate, per = 25, 0.2
    declare(conn, "flow", rate=rate, per=f"{per} seconds")
    enqueue(conn, "flow", 3000)
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
    # in microseconds, exact: extract gives a numeric, never a float8
    rows = [(r[0], r[1]) for r in conn.execute(
        "select (extract(epoch from claimed_at) * 1000000)::bigint, jobs from public.window_audit order by 1").fetchall()]
    per_us = round(per * 1_000_000)
    bad = window_violations(rows, rate, per_us)
    print(f"\nrate {rate} per {per}s: {n} claimers for {elapsed:.1f}s, {claims} jobs claimed in "
          f"{len(rows)} claims; at most {max(sum(m for u, m in rows if t - per_us < u <= t) for t, _ in rows)} "
          f"in a window; {len(bad)} windows above the rate")
    assert sum(j for _, j in rows) == claims, "every claimed job is counted in the window"
    assert bad == []
    # and not throttled far below the rate: the windows did fill up
    assert claims >= rate * (elapsed / per) * 0.5
    assert claims <= rate * (elapsed / per + 1)


def test_a_claim_that_waited_for_the_lock_is_counted_when_it_got_it(db: str, conn: Conn) -> None:
    """A rate-limited claim reads the clock once it holds the topic's lock, not when it
    began to wait for it: a claim counted from the instant it started would enter the
    window earlier than it took its jobs, leave it earlier too, and let the next claims
    take a full rate while its jobs were claimed less than per before. The lock is held
    here by a transaction; the claim waits for it (pg_locks says so); the holder reads
    the clock and commits: the claim must be counted no earlier than that."""
    declare(conn, "flow", rate=5, per="10 seconds")
    enqueue(conn, "flow", 5)
    with connections(db, 2) as (holder, waiter):
        pid = waiter.info.backend_pid
        got: list[list[tuple[int, int]]] = []
        thread = threading.Thread(target=lambda: got.append(claim(waiter, "w", ["flow"], 3)), daemon=True)
        with holder.transaction():
            holder.execute("select from brooq.flow_lock where topic = 'flow' for update")
            thread.start()
            for _ in range(3000):
                row = conn.execute("select count(*) from pg_locks where pid = %s and not granted", (pid,)).fetchone()
                assert row is not None
                if row[0]:
                    break
                time.sleep(0.01)
            else:
                pytest.fail("the claim never waited for the topic's lock")
            time.sleep(0.05)  # the clock moves on while the claim waits
            released = holder.execute("select clock_timestamp()").fetchone()
            assert released is not None
        thread.join(timeout=30)
    assert len(got) == 1 and len(got[0]) == 3
    counted = conn.execute("select claimed_at from brooq.claim_window where topic = 'flow'").fetchall()
    assert len(counted) == 1
    assert counted[0][0] >= released[0], \
        f"the claim is counted at {counted[0][0]}, before it got the lock at {released[0]}"


# ordered groups -------------------------------------------------------------------

AUDIT = """
create table public.group_audit (id bigint, group_key text, seq bigint, event text,
                                 at timestamptz default clock_timestamp());
create function public.audit_group() returns trigger language plpgsql as $$
begin
    if new.state = 'processing' then
        insert into public.group_audit (id, group_key, seq, event) values (new.id, new.group_key, new.group_seq, 'claim');
    elsif old.state = 'processing' then
        insert into public.group_audit (id, group_key, seq, event) values (new.id, new.group_key, new.group_seq, 'release');
    end if;
    return new;
end $$;
create trigger audit after update of state on brooq.job
   for each row when (new.group_key is not null and old.state is distinct from new.state)
   execute function public.audit_group();
"""


class GroupSampler(Sampler):
    """The most jobs of one group seen processing at once."""

    def run(self) -> None:
        with psycopg.connect(self.dsn, autocommit=True) as c:
            while not self.halt.is_set():
                row = c.execute("select coalesce(max(n), 0) from (select count(*) as n from brooq.job"
                                " where state = 'processing' and group_key is not null"
                                " group by topic, group_key) as g").fetchone()
                assert row is not None
                self.samples += 1
                self.max_seen = max(self.max_seen, row[0])


def test_groups_run_one_at_a_time_in_order_while_producers_and_claimers_race(db: str, conn: Conn) -> None:
    """Producers enqueue into 20 groups in transactions that commit late, while
    claimers claim, settle, fail for a retry, cancel, and let leases expire for a
    reaper. A trigger writes every claim and release of a grouped job with the
    clock: within a group, no two claim-release intervals may overlap, and jobs are
    first claimed in group_seq (enqueue commit) order."""
    declare(conn, "flow", max_attempts=3)
    conn.execute(AUDIT)
    groups = [f"g{k}" for k in range(20)]
    producers, claimers, seconds = 4, 10, 3.0

    def work(i: int, c: Conn, barrier: Any) -> int:
        rng = random.Random(i)
        barrier.wait()
        end = time.monotonic() + seconds
        done = 0
        if i < producers:
            while time.monotonic() < end:
                with c.transaction():
                    # several groups in one transaction: in key order (or enqueue_many),
                    # else two such transactions may deadlock on the groups' rows
                    for g in sorted(rng.choice(groups) for _ in range(rng.randint(1, 3))):
                        c.execute("select brooq.enqueue('flow', '{}', group_key => %s)", (g,))
                        done += 1
                    time.sleep(rng.random() * 0.02)  # commit late: others enqueue meanwhile
            return done
        while time.monotonic() < end + 1.0:
            got = claim(c, f"w{i}", ["flow"], rng.randint(1, 6), lease="100 milliseconds")
            done += len(got)
            for job, token in got:
                action = rng.random()
                if action < 0.6:
                    settle(c, job, f"w{i}", token, "done")
                elif action < 0.75:
                    c.execute("select brooq.settle(%s, %s, %s, 'failed', error => 'retry', delay => '0 s')",
                              (job, f"w{i}", token))
                elif action < 0.85:
                    c.execute("select brooq.cancel(%s)", (job,))
                # else: its lease expires; reaped below
            if rng.random() < 0.2:
                reap(c)
            if not got:
                time.sleep(0.01)
        return done

    with GroupSampler(db, "flow") as sampler:
        results = race(db, producers + claimers, work)
    enqueued, claims = sum(results[:producers]), sum(results[producers:])
    rows = conn.execute("select id, group_key, seq, event, at from public.group_audit order by at, event").fetchall()
    overlaps, disorder = [], []
    for g in groups:
        events = [r for r in rows if r[1] == g]
        holder = None
        for job, _, _, event, _ in events:
            if event == "claim":
                if holder is not None:
                    overlaps.append((g, holder, job))
                holder = job
            elif job == holder:
                holder = None
        first: dict[int, int] = {}
        for job, _, seq, event, _ in events:
            if event == "claim" and job not in first:
                first[job] = seq
        seqs = list(first.values())
        if seqs != sorted(seqs):
            disorder.append((g, seqs))
    print(f"\ngroups: {producers} producers enqueued {enqueued} jobs into {len(groups)} groups while "
          f"{claimers} claimers claimed {claims}; {len(rows)} claims and releases audited, "
          f"{sampler.samples} samples; max of one group in flight {sampler.max_seen}; "
          f"{len(overlaps)} overlaps, {len(disorder)} groups out of order")
    assert claims > 200, "too few claims: the test proves nothing"
    assert overlaps == []
    assert disorder == []
    assert sampler.max_seen == 1
