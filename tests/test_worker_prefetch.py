"""Prefetch: jobs claimed ahead of free handler threads are leased, handed back, or dropped."""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from typing import Any

import brooq
import psycopg
from helpers import FAST, enqueue, fate, running, wait_for

Conn = psycopg.Connection[tuple[Any, ...]]


def test_a_graceful_stop_hands_back_prefetched_jobs_without_charging_an_attempt(
        db: str, conn: Conn) -> None:
    worker = brooq.Worker(db, concurrency=1, prefetch=3, **FAST)
    ran: list[int] = []
    gate = threading.Event()

    @worker.handler("slow")
    def slow(job: brooq.Job) -> None:
        ran.append(job.id)
        gate.wait(10)

    worker.declare_topics()
    ids = enqueue(conn, "slow", 4)
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    try:
        wait_for(lambda: ran, what="the first handler to start")
        # one running, three prefetched: all four leased by this worker
        assert [fate(conn, i).state for i in ids] == ["processing"] * 4
        worker.stop(timedelta(seconds=10))
        others = [i for i in ids if i != ran[0]]
        wait_for(lambda: all(fate(conn, i).state != "processing" for i in others),
                 what="the prefetched jobs to be handed back")
        gate.set()
        thread.join(timeout=10)
        assert not thread.is_alive(), "the worker did not stop"
    finally:
        gate.set()
        worker.stop(timedelta(0))
    assert ran == ids[:1]  # the handler ran once: the prefetched jobs never started
    first = fate(conn, ids[0])
    assert (first.state, first.attempts) == ("done", 1)
    assert [fate(conn, i).attempts for i in others] == [0, 0, 0]  # no attempt charged
    assert all(fate(conn, i).state != "processing" for i in ids)

    # they are ready at once: another worker runs each as its first attempt
    again = brooq.Worker(db, **FAST)
    seen: dict[int, int] = {}

    @again.handler("slow")
    def record(job: brooq.Job) -> None:
        seen[job.id] = job.attempt

    with running(again):
        wait_for(lambda: all(fate(conn, i).state == "done" for i in others),
                 what="the handed-back jobs to be done")
    assert seen == {i: 1 for i in others}


def test_a_prefetched_job_canceled_before_it_starts_never_runs(db: str, conn: Conn) -> None:
    worker = brooq.Worker(db, concurrency=1, prefetch=1, **FAST)
    ran: list[int] = []
    gate = threading.Event()

    @worker.handler("slow")
    def slow(job: brooq.Job) -> None:
        ran.append(job.id)
        gate.wait(10)

    worker.declare_topics()
    ids = enqueue(conn, "slow", 2)
    try:
        with running(worker):
            wait_for(lambda: ran, what="the first handler to start")
            waiting = next(i for i in ids if i != ran[0])
            assert fate(conn, waiting).state == "processing"  # prefetched: leased, not started
            assert brooq.cancel(conn, waiting)
            wait_for(lambda: worker.snapshot().lease_lost == 1,
                     what="the worker to notice the lost lease")
            gate.set()
            wait_for(lambda: fate(conn, ran[0]).state == "done", what="the first job to be done")
            wait_for(lambda: worker.snapshot().in_flight == 0, what="the worker to drop the job")
    finally:
        gate.set()
    assert ran == [ids[0]] or ran == [ids[1]]  # the canceled job's handler never ran
    assert fate(conn, waiting).state == "canceled"


def test_outcomes_not_yet_written_hold_claims_back_beyond_three_capacities() -> None:
    """The settling thread's backlog (Worker._free): up to three capacities of outcomes
    not yet written leave every free slot to claim for; each one more holds a slot back,
    so a database slow to settle slows claiming instead of piling up outcomes in memory."""
    from brooq.scheduling import UNSETTLED_CAPACITIES

    worker = brooq.Worker("postgresql://nobody@127.0.0.1:1/none", concurrency=3, prefetch=2)
    capacity = 5
    assert UNSETTLED_CAPACITIES == 3
    for unsettled, free in ((0, capacity), (3 * capacity, capacity), (3 * capacity + 1, capacity - 1),
                            (4 * capacity, 0)):
        worker._settle_thread.in_flight = unsettled
        assert worker._free() == free, unsettled


def test_a_settle_that_frees_an_ordered_groups_next_job_claims_again(
        db: str, conn: psycopg.Connection[Any]) -> None:
    """An ordered group's next job becomes ready when its predecessor is settled, and
    no enqueue notifies it: a worker whose last claim came back with jobs but not full
    claims again once its settles are written, instead of waiting for the poll (here
    60 s). 3 groups of 8 jobs drain in seconds, not 8 poll intervals."""
    worker = brooq.Worker(db, concurrency=4, poll_interval=timedelta(seconds=60))
    done: list[int] = []

    @worker.handler("ordered")
    def ordered(job: brooq.Job) -> None:
        done.append(job.id)

    worker.declare_topics()
    brooq.enqueue_many(conn, "ordered", [{}] * 24, groups=[f"g{i % 3}" for i in range(24)])
    with running(worker):
        wait_for(lambda: len(done) == 24, timeout=20, what="24 grouped jobs, one at a time per group")


def test_claims_after_settles_ask_for_no_more_than_the_settles_made_ready(
        db: str, conn: psycopg.Connection[Any]) -> None:
    """A claim that asks for more jobs than are ready passes over every job of a blocked
    ordered group (brooq.claim, "Cost"); so a claim asked for by settles takes at most
    one job per outcome written. 1,000 jobs in 4 groups, a worker holding 10: the
    claims read job_ready_idx a few times per job (old: ~250 times, the backlog per claim)."""
    worker = brooq.Worker(db, concurrency=2, prefetch=8, poll_interval=timedelta(seconds=60))
    done: list[int] = []

    @worker.handler("ordered")
    def ordered(job: brooq.Job) -> None:
        done.append(job.id)

    worker.declare_topics()
    brooq.enqueue_many(conn, "ordered", [{}] * 1000, groups=[f"g{i % 4}" for i in range(1000)])
    before = index_reads(conn)
    with running(worker):
        wait_for(lambda: len(done) == 1000, timeout=60, what="1,000 grouped jobs")
    reads = [before]
    # the worker's backends report their statistics as they exit: wait for the figure to settle
    wait_for(lambda: reads.append(index_reads(conn)) or reads[-1] == reads[-2] != before,
             timeout=10, what="the worker's index statistics")
    assert reads[-1] - before < 20 * 1000, (before, reads)


def index_reads(conn: psycopg.Connection[Any]) -> int:
    """Entries read from job_ready_idx, as the statistics say now."""
    time.sleep(0.3)
    conn.execute("select pg_stat_clear_snapshot()")
    row = conn.execute("select idx_tup_read from pg_stat_user_indexes where indexrelname = 'job_ready_idx'").fetchone()
    assert row is not None
    return int(row[0])
