"""brooq's SQL under concurrency: several real connections racing on the same jobs.

Each test opens one psycopg connection per thread (psycopg releases the GIL while
it waits on the server, so the statements really run at the same time in
PostgreSQL backends), lines the threads up on a barrier, and then checks what a
user relies on: no job handed to two workers, one row per idempotency key, a
lost lease never written to, terminal states never overwritten.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from typing import Any, TypeVar

import psycopg
import pytest
from helpers import declare, enqueue

Conn = psycopg.Connection[tuple[Any, ...]]
T = TypeVar("T")

TERMINAL = ("done", "dead", "canceled")


@contextmanager
def connections(dsn: str, n: int) -> Iterator[list[Conn]]:
    """n autocommit connections to the test's database, closed at the end."""
    with ExitStack() as stack:
        yield [stack.enter_context(psycopg.connect(dsn, autocommit=True)) for _ in range(n)]


def race(dsn: str, n: int, work: Callable[[int, Conn, threading.Barrier], T]) -> list[T]:
    """Run work(i, conn, barrier) in n threads, each with its own connection.

    The connections are opened before any thread starts; work calls
    barrier.wait() where the threads should line up. Exceptions propagate.
    """
    barrier = threading.Barrier(n, timeout=30)
    with connections(dsn, n) as conns, ThreadPoolExecutor(max_workers=n) as pool:
        futures = [pool.submit(work, i, conns[i], barrier) for i in range(n)]
        try:
            return [f.result(timeout=60) for f in futures]
        except BaseException:
            barrier.abort()
            raise


def states(conn: Conn, ids: Sequence[int]) -> dict[int, tuple[Any, ...]]:
    """id -> (state, attempts, locked_by, lease_token) for the given jobs."""
    rows = conn.execute(
        "select id, state, attempts, locked_by, lease_token from brooq.job where id = any(%s)",
        (list(ids),)).fetchall()
    return {r[0]: tuple(r[1:]) for r in rows}


def claim(conn: Conn, worker: str, topics: Sequence[str], max_jobs: int,
          lease: str = "5 minutes") -> list[tuple[int, int]]:
    """(id, lease_token) of the jobs claimed."""
    rows = conn.execute(
        "select id, lease_token from brooq.claim(%s, %s, %s, %s::interval)",
        (worker, list(topics), max_jobs, lease)).fetchall()
    return [(r[0], r[1]) for r in rows]


def claim_all(conn: Conn, worker: str, topics: Sequence[str]) -> dict[int, int]:
    """Claim until nothing is ready: a claim takes at most one job that lost its lease
    (brooq.claim, the poison pill's neighbours), so reaped jobs come back one a call."""
    got: dict[int, int] = {}
    while batch := claim(conn, worker, topics, 1000):
        got |= dict(batch)
    return got


def settle(conn: Conn, job: int, worker: str, token: int, outcome: str = "done") -> str | None:
    row = conn.execute("select brooq.settle(%s, %s, %s, %s)", (job, worker, token, outcome)).fetchone()
    assert row is not None
    return row[0]  # type: ignore[no-any-return]


def heartbeat(conn: Conn, worker: str, jobs: Sequence[int], tokens: Sequence[int] | None,
              lease: str = "5 minutes") -> set[int]:
    rows = conn.execute("select * from brooq.heartbeat(%s, %s, %s::interval, %s)",
                        (worker, list(jobs), lease, None if tokens is None else list(tokens))).fetchall()
    return {r[0] for r in rows}


def reap(conn: Conn, max_jobs: int = 1000) -> list[int]:
    return [r[0] for r in conn.execute("select id from brooq.reap(%s)", (max_jobs,)).fetchall()]


def expire_leases(conn: Conn, jobs: Sequence[int], worker: str) -> dict[int, int]:
    """Claim exactly `jobs` with a 50 ms lease and let it run out; id -> lease_token."""
    held = dict(claim(conn, worker, ["race"], len(jobs), lease="50 milliseconds"))
    assert set(held) == set(jobs)
    time.sleep(0.15)
    return held


# 1. claimers ----------------------------------------------------------------------

@pytest.mark.parametrize("start_together", [False, True], ids=["staggered", "barrier"])
@pytest.mark.parametrize("topics", [["race"], ["race", "race.b", "race.c"]], ids=["one-topic", "three-topics"])
def test_claimers_never_get_the_same_job(db: str, conn: Conn, start_together: bool,
                                         topics: list[str]) -> None:
    jobs: list[int] = []
    for t in topics:
        declare(conn, t)
        jobs += enqueue(conn, t, 3000 // len(topics))

    def claimer(i: int, c: Conn, barrier: threading.Barrier) -> list[tuple[int, int]]:
        rng = random.Random(i)
        if start_together:
            barrier.wait()
        got: list[tuple[int, int]] = []
        while batch := claim(c, f"w{i}", topics, rng.randint(1, 12)):
            got += batch
        return got

    results = race(db, 8, claimer)

    claimed = [job for got in results for job, _ in got]
    twice = [job for job, n in Counter(claimed).items() if n > 1]
    assert twice == [], f"jobs handed to two claimers: {twice[:10]}"
    assert sorted(claimed) == sorted(jobs), "some jobs were never claimed"
    now = states(conn, jobs)
    for i, got in enumerate(results):
        for job, token in got:
            assert now[job] == ("processing", 1, f"w{i}", token), (job, now[job])


# 2. idempotent enqueues -------------------------------------------------------------

@pytest.mark.parametrize("rollback_some", [False, True], ids=["all-commit", "some-roll-back"])
def test_concurrent_enqueues_of_one_key_make_one_job(db: str, conn: Conn, rollback_some: bool) -> None:
    declare(conn, "race")
    n = 8

    def producer(i: int, c: Conn, barrier: threading.Barrier) -> list[tuple[int, bool, bool]]:
        out = []
        for key in range(6):
            rolls_back = rollback_some and (i + key) % 3 == 0
            with c.transaction(force_rollback=rolls_back):
                barrier.wait()
                row = c.execute("select id, created from brooq.enqueue('race', %s::jsonb, %s)",
                                (json.dumps({"by": i}), f"key-{key}")).fetchone()
                assert row is not None
                time.sleep(0.03)  # hold the row uncommitted while the others arrive
            out.append((row[0], row[1], not rolls_back))
        return out

    results = race(db, n, producer)

    for key in range(6):
        calls = [(i, results[i][key]) for i in range(n)]
        committed = [(i, job, created) for i, (job, created, kept) in calls if kept]
        creators = [i for i, _, created in committed if created]
        assert len(creators) == 1, f"key-{key}: creators among committed callers {creators}"
        ids = {job for _, job, _ in committed}
        rows = conn.execute("select id, payload->>'by' from brooq.job where idempotency_key = %s",
                            (f"key-{key}",)).fetchall()
        assert len(rows) == 1, f"key-{key}: {len(rows)} rows"
        assert ids == {rows[0][0]}, f"key-{key}: callers got {ids}, the row is {rows[0][0]}"
        assert rows[0][1] == str(creators[0]), "the row is not the one its creator wrote"
    assert conn.execute("select count(*) from brooq.job").fetchone() == (6,)


def test_concurrent_enqueue_many_with_overlapping_keys(db: str, conn: Conn) -> None:
    declare(conn, "race")
    shared = [f"shared-{k}" for k in range(150)]
    n = 6

    def producer(i: int, c: Conn, barrier: threading.Barrier) -> list[tuple[str, int, bool]]:
        rng = random.Random(i)
        keys = shared + [f"own-{i}-{k}" for k in range(20)]
        rng.shuffle(keys)
        keys += keys[:5]  # repeated inside the batch too
        with c.transaction():
            barrier.wait()
            rows = c.execute(
                "select id, created from brooq.enqueue_many('race', %s::jsonb[], %s)",
                ([json.dumps({"by": i, "key": k}) for k in keys], keys)).fetchall()
            time.sleep(0.03)
        assert len(rows) == len(keys)
        assert not any(created for _, created in rows[-5:]), "a repeat in the batch was created"
        return [(k, row[0], row[1]) for k, row in zip(keys, rows)]

    results = race(db, n, producer)

    stored: dict[str, int] = dict(conn.execute(
        "select idempotency_key, id from brooq.job").fetchall())
    assert len(stored) == conn.execute("select count(*) from brooq.job").fetchone()[0]  # type: ignore[index]
    assert set(stored) == set(shared) | {f"own-{i}-{k}" for i in range(n) for k in range(20)}
    created: Counter[str] = Counter()
    for got in results:
        for key, job, was_created in got:
            assert job == stored[key], f"{key}: a caller got {job}, the row is {stored[key]}"
            created[key] += was_created
    assert all(created[k] == 1 for k in stored), {k: c for k, c in created.items() if c != 1}


def test_enqueue_many_races_purge_of_its_keys(db: str, conn: Conn) -> None:
    """A key whose old job is purged while enqueue_many runs still gets an id.

    One producer enqueues the same keys again and again; a worker cancels what it
    enqueued; two purgers delete the canceled jobs as soon as they are due (1 ms).
    So the producer keeps meeting keys whose job is being deleted under it.
    """
    declare(conn, "race", retention="1 millisecond")
    keys = [f"k{i}" for i in range(300)]
    stop = time.monotonic() + 2.0

    def work(i: int, c: Conn, barrier: threading.Barrier) -> list[list[tuple[Any, ...]]]:
        barrier.wait()
        calls: list[list[tuple[Any, ...]]] = []
        while time.monotonic() < stop:
            if i == 0:
                calls.append(c.execute(
                    "select id, created from brooq.enqueue_many('race',"
                    " array_fill('{}'::jsonb, array[%s]), %s)", (len(keys), keys)).fetchall())
            elif i == 1:
                held = claim(c, "canceler", ["race"], 100)
                c.execute("select count(*) from brooq.settle_many('canceler', %s, %s,"
                          " array_fill('cancel'::text, array[%s]))",
                          ([j for j, _ in held], [t for _, t in held], len(held)))
            else:
                c.execute("select brooq.purge(50)")
        return calls

    calls = race(db, 4, work)[0]
    assert len(calls) > 5
    for rows in calls:
        assert len(rows) == len(keys)
        missing = [keys[n] for n, (job, _) in enumerate(rows) if job is None]
        assert missing == [], f"enqueue_many returned no id for {len(missing)} keys, e.g. {missing[:5]}"
    recreated = sum(created for rows in calls for _, created in rows) - len(keys)
    assert recreated > 0, "no key was purged and enqueued again: the race did not happen"


# 3. cancel vs claim -------------------------------------------------------------------

def test_cancel_races_claim(db: str, conn: Conn) -> None:
    declare(conn, "race")
    jobs = enqueue(conn, "race", 600)
    to_cancel = random.Random(7).sample(jobs, 400)
    claimers, cancelers = 4, 2

    def work(i: int, c: Conn, barrier: threading.Barrier) -> dict[str, Any]:
        rng = random.Random(i)
        out: dict[str, Any] = {"claimed": {}, "lost": set(), "settled": {}, "canceled": []}
        barrier.wait()
        if i >= claimers:  # a canceler: every chosen job, in its own order
            order = list(to_cancel)
            rng.shuffle(order)
            for job in order:
                row = c.execute("select brooq.cancel(%s)", (job,)).fetchone()
                if row == (True,):
                    out["canceled"].append(job)
            return out
        worker = f"w{i}"
        while batch := claim(c, worker, ["race"], rng.randint(1, 8)):
            held = dict(batch)
            out["claimed"].update(held)
            alive = heartbeat(c, worker, list(held), list(held.values()))
            out["lost"] |= set(held) - alive
            for job, token in held.items():
                if job % 2 == 0:  # even jobs are settled, odd ones stay held
                    out["settled"][job] = settle(c, job, worker, token)
        return out

    results = race(db, claimers + cancelers, work)

    claimed_by: dict[int, tuple[str, int]] = {}
    for i, r in enumerate(results[:claimers]):
        for job, token in r["claimed"].items():
            assert job not in claimed_by, f"job {job} claimed twice"
            claimed_by[job] = (f"w{i}", token)
    canceled = Counter(job for r in results[claimers:] for job in r["canceled"])
    assert all(n == 1 for n in canceled.values()), "two cancels of one job both returned true"
    settled = {job: s for r in results[:claimers] for job, s in r["settled"].items()}
    lost = set().union(*(r["lost"] for r in results[:claimers]))

    final = states(conn, jobs)
    for job in jobs:
        state, attempts, locked_by, token = final[job]
        if job in canceled:
            assert state == "canceled" and locked_by is None, (job, final[job])
            assert settled.get(job) is None, f"job {job} canceled, yet its settle wrote {settled[job]}"
        elif job in settled:
            assert settled[job] == "done" and state == "done", (job, final[job], settled[job])
        else:  # an odd job nobody canceled: held by exactly the worker that claimed it
            assert (state, locked_by, token) == ("processing", *claimed_by[job]), (job, final[job])
        if job in lost:  # heartbeat dropped it: only a cancel can have done that here
            assert job in canceled, f"heartbeat lost job {job}, which was not canceled"
        assert attempts == (1 if job in claimed_by else 0)
    # Every chosen job that was not done is canceled; the others were never touched by cancel.
    assert set(canceled) == {j for j in to_cancel if settled.get(j) != "done"}

    # Afterwards: the claimer of a canceled job can neither settle nor renew it,
    # done jobs cannot be canceled, and nothing terminal changes.
    for job, (worker, token) in claimed_by.items():
        if job in canceled:
            assert settle(conn, job, worker, token, "failed") is None
            assert heartbeat(conn, worker, [job], [token]) == set()
        elif final[job][0] == "done":
            assert conn.execute("select brooq.cancel(%s)", (job,)).fetchone() == (False,)
            assert settle(conn, job, worker, token, "failed") is None
        else:
            assert heartbeat(conn, worker, [job], [token]) == {job}
            assert settle(conn, job, worker, token) == "done"
    after = states(conn, jobs)
    for job in jobs:
        if final[job][0] in TERMINAL:
            assert after[job] == final[job], f"terminal job {job} changed: {final[job]} -> {after[job]}"


# 4. settle vs reap, then the zombie --------------------------------------------------

def test_late_settle_races_reap_and_the_zombie_is_fenced(db: str, conn: Conn) -> None:
    declare(conn, "race")
    jobs = enqueue(conn, "race", 300)
    held = expire_leases(conn, jobs, "a")
    settlers = 3  # against one reaper taking 1 to 3 jobs a call: both sides win some

    def work(i: int, c: Conn, barrier: threading.Barrier) -> dict[int, str | None] | list[int]:
        rng = random.Random(i)
        mine = jobs[i::settlers]
        rng.shuffle(mine)
        barrier.wait()
        if i < settlers:  # the original holder, late: settle its share one by one
            return {job: settle(c, job, "a", held[job]) for job in mine}
        got: list[int] = []
        while batch := reap(c, rng.randint(1, 3)):
            got += batch
        return got

    results = race(db, settlers + 1, work)

    settled: dict[int, str | None] = {}
    for r in results[:settlers]:
        assert isinstance(r, dict)
        settled |= r
    reaped = [job for r in results[settlers:] for job in r]
    assert len(reaped) == len(set(reaped)), "a job was reaped twice"
    final = states(conn, jobs)
    for job in jobs:
        state, attempts, locked_by, _ = final[job]
        if job in reaped:
            assert settled[job] is None, f"job {job} reaped, yet the late settle wrote {settled[job]}"
            assert (state, attempts, locked_by) == ("pending", 1, None), (job, final[job])
        else:
            assert settled[job] == "done" and state == "done", (job, settled[job], final[job])
            assert attempts == 1
    reasons = conn.execute("select count(*) from brooq.job where id = any(%s) and last_error like '%%expired%%'",
                           (reaped,)).fetchone()
    assert reasons == (len(reaped),), "reap did not note why the job went back"

    # Another worker takes the reaped jobs; the zombie "a" cannot touch them.
    retaken = claim_all(conn, "b", ["race"])
    assert set(retaken) == set(reaped)
    zombie = psycopg.connect(db, autocommit=True)
    with zombie:
        for job, token in retaken.items():
            assert token != held[job]
            assert settle(zombie, job, "a", held[job]) is None
        ids = list(retaken)
        assert heartbeat(zombie, "a", ids, [held[j] for j in ids]) == set()
        assert zombie.execute(
            "select count(*) from brooq.settle_many('a', %s, %s, array_fill('done'::text, array[%s]))",
            (ids, [held[j] for j in ids], len(ids))).fetchone() == (0,)
    for job, row in states(conn, ids).items():
        assert row == ("processing", 2, "b", retaken[job]), (job, row)
    assert all(settle(conn, job, "b", token) == "done" for job, token in retaken.items())


def test_late_heartbeat_races_reap(db: str, conn: Conn) -> None:
    """An expired lease is renewed by a late heartbeat or reaped, never both."""
    declare(conn, "race")
    jobs = enqueue(conn, "race", 300)
    held = expire_leases(conn, jobs, "a")
    beaters = 3

    def work(i: int, c: Conn, barrier: threading.Barrier) -> set[int] | list[int]:
        rng = random.Random(i)
        mine = jobs[i::beaters]
        rng.shuffle(mine)
        barrier.wait()
        if i < beaters:
            renewed: set[int] = set()
            for job in mine:
                renewed |= heartbeat(c, "a", [job], [held[job]])
            return renewed
        got: list[int] = []
        while batch := reap(c, rng.randint(1, 3)):
            got += batch
        return got

    results = race(db, beaters + 1, work)
    renewed = set().union(*results[:beaters])
    reaped = results[beaters]
    assert isinstance(reaped, list) and len(reaped) == len(set(reaped))
    assert renewed.isdisjoint(reaped), f"renewed and reaped: {sorted(renewed & set(reaped))[:10]}"
    assert renewed | set(reaped) == set(jobs)
    final = states(conn, jobs)
    for job in jobs:
        expected = ("processing", 1, "a", held[job]) if job in renewed else ("pending", 1, None, held[job])
        assert final[job] == expected, (job, final[job])
    assert not set(reap(conn)) & renewed, "a renewed lease was reaped afterwards"
    assert all(settle(conn, job, "a", held[job]) == "done" for job in renewed)
    assert all(settle(conn, job, "a", held[job]) is None for job in reaped)


def test_concurrent_declarations_of_one_topic(db: str, conn: Conn) -> None:
    def declarer(i: int, c: Conn, barrier: threading.Barrier) -> int:
        barrier.wait()
        row = c.execute("select max_attempts from brooq.declare_topic('fresh', max_attempts => %s)",
                        (i + 1,)).fetchone()
        assert row is not None
        return int(row[0])

    answers = race(db, 8, declarer)
    assert sorted(answers) == list(range(1, 9)), "each declaration returns its own settings"
    rows = conn.execute("select max_attempts from brooq.topic where name = 'fresh'").fetchall()
    assert len(rows) == 1 and rows[0][0] in answers


# 5. the same worker, reaped and claimed again -----------------------------------------

def test_same_worker_cannot_settle_with_an_old_lease_token(db: str, conn: Conn) -> None:
    declare(conn, "race")
    jobs = enqueue(conn, "race", 50)
    old = expire_leases(conn, jobs, "w")
    with psycopg.connect(db, autocommit=True) as reaper:
        assert sorted(reap(reaper)) == sorted(jobs)
    new = claim_all(conn, "w", ["race"])
    assert set(new) == set(jobs)
    with psycopg.connect(db, autocommit=True) as stale:
        for job in jobs:
            assert new[job] != old[job]
            assert settle(stale, job, "w", old[job]) is None, f"old token settled job {job}"
        assert heartbeat(stale, "w", jobs, [old[j] for j in jobs]) == set()
    for job, row in states(conn, jobs).items():
        assert row == ("processing", 2, "w", new[job])
    assert heartbeat(conn, "w", jobs, [new[j] for j in jobs]) == set(jobs)
    for job in jobs:
        assert settle(conn, job, "w", new[job]) == "done"
        assert settle(conn, job, "w", new[job]) is None, "a repeated settle wrote again"
    assert {row[0] for row in states(conn, jobs).values()} == {"done"}


# 6. many reapers ----------------------------------------------------------------------

def test_many_reapers_reap_each_job_once(db: str, conn: Conn) -> None:
    declare(conn, "race")
    jobs = enqueue(conn, "race", 2000)
    expire_leases(conn, jobs, "gone")

    def reaper(i: int, c: Conn, barrier: threading.Barrier) -> list[int]:
        rng = random.Random(i)
        barrier.wait()
        got: list[int] = []
        while batch := reap(c, rng.randint(1, 100)):
            got += batch
        return got

    reaped = [job for got in race(db, 6, reaper) for job in got]
    twice = [job for job, n in Counter(reaped).items() if n > 1]
    assert twice == [], f"reaped twice: {twice[:10]}"
    assert sorted(reaped) == sorted(jobs)
    assert {row[:3] for row in states(conn, jobs).values()} == {("pending", 1, None)}


# 7. purge from two connections ----------------------------------------------------------

def make_jobs(conn: Conn, topic: str, n: int) -> None:
    """n jobs on topic in every state: done, dead, canceled, pending, processing, failed."""
    jobs = enqueue(conn, topic, n)
    sixth = n // 6
    for job in jobs[:sixth]:
        conn.execute("select brooq.cancel(%s)", (job,))
    held = dict(claim(conn, "maker", [topic], n - 2 * sixth))  # a sixth stays pending
    ids = sorted(held)
    outcomes = (["done"] * sixth + ["failed"] * sixth + ["preserve"] * sixth)
    outcomes += ["keep"] * (len(ids) - len(outcomes))
    settled = [(j, held[j], o) for j, o in zip(ids, outcomes) if o != "keep"]
    conn.execute("select count(*) from brooq.settle_many('maker', %s, %s, %s)",
                 ([s[0] for s in settled], [s[1] for s in settled], [s[2] for s in settled]))
    # max_attempts 1: 'failed' made those dead; preserve left them failed; 'keep' are processing.


def test_two_purgers_delete_each_old_terminal_job_once(db: str, conn: Conn) -> None:
    declare(conn, "short", max_attempts=1, retention="1 millisecond")
    declare(conn, "keep", max_attempts=1, retention="0")
    declare(conn, "long", max_attempts=1, retention="1 day")
    for topic in ("short", "keep", "long"):
        make_jobs(conn, topic, 1200)
    census: dict[str, int] = dict(conn.execute(
        "select state, count(*) from brooq.job where topic = 'short' group by state").fetchall())
    assert set(census) == {"done", "dead", "canceled", "pending", "processing", "failed"}
    due = sum(census[s] for s in TERMINAL)
    survivors_query = ("select md5(string_agg(j::text, ',' order by j.id)), count(*) from brooq.job j"
                       " where topic <> 'short' or state not in ('done', 'dead', 'canceled')")
    survivors = conn.execute(survivors_query).fetchone()
    time.sleep(0.02)

    def purger(i: int, c: Conn, barrier: threading.Barrier) -> int:
        rng = random.Random(i)
        barrier.wait()
        total = 0
        while n := c.execute("select brooq.purge(%s)", (rng.randint(10, 80),)).fetchone()[0]:  # type: ignore[index]
            total += n
        return total

    deleted = race(db, 2, purger)

    assert sum(deleted) == due, f"purgers deleted {deleted}, {due} were due"
    assert conn.execute(survivors_query).fetchone() == survivors, "purge touched a row it must keep"
    left = conn.execute("select count(*) from brooq.job where topic = 'short' and state in"
                        " ('done', 'dead', 'canceled')").fetchone()
    assert left == (0,)


def test_two_purge_all_procedures_at_once(db: str, conn: Conn) -> None:
    declare(conn, "short", max_attempts=1, retention="1 millisecond")
    make_jobs(conn, "short", 1200)
    before = conn.execute("select array_agg(id order by id) from brooq.job"
                          " where state not in ('done', 'dead', 'canceled')").fetchone()
    time.sleep(0.02)

    def purger(i: int, c: Conn, barrier: threading.Barrier) -> None:
        barrier.wait()
        c.execute("call brooq.purge_all(batch_size => %s)", (25 + 10 * i,))

    race(db, 2, purger)
    after = conn.execute("select array_agg(id order by id) from brooq.job").fetchone()
    assert after == before
