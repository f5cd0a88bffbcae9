"""The progress line of `brooq worker` and `brooq demo`: what it counts, and its first line."""

from __future__ import annotations

import io
import re
import threading
import time
from dataclasses import dataclass

import brooq
import psycopg
from brooq.tools.progress import Progress, Reading, format_line
from helpers import FAST, running, wait_for


@dataclass(frozen=True)
class Counts:
    done: int
    failed: int = 0
    retried: int = 0
    dead: int = 0
    canceled: int = 0
    lease_lost: int = 0
    in_flight: int = 0
    prefetched: int = 0
    connected: bool = True
    stopping: bool = False


def test_the_first_line_shows_the_rate_since_start_not_zero() -> None:
    t0 = time.monotonic()
    stream = io.StringIO()
    progress = Progress(lambda: Counts(done=int((time.monotonic() - t0) * 1000)), stream,
                        live=True, refresh=0.1)
    with progress:
        time.sleep(0.25)
    first = stream.getvalue().split("\r\x1b[2K")[1]  # the first line drawn
    rate = int(first.split("jobs/s")[0])
    assert 500 <= rate <= 1500, first  # was "0 jobs/s": a rate over one point


def test_in_flight_counts_running_handlers_not_prefetched_jobs(
        db: str, conn: psycopg.Connection[tuple[object, ...]]) -> None:
    worker = brooq.Worker(db, concurrency=2, prefetch=2, **FAST)
    gate = threading.Event()

    @worker.handler("slow")
    def slow(job: brooq.Job) -> None:
        gate.wait(10)

    worker.declare_topics()
    brooq.enqueue_many(conn, "slow", [{}] * 6)
    try:
        with running(worker):
            # a pool thread may start its job a moment after the claim is counted
            snap = wait_for(lambda: (s := worker.snapshot()).claimed == 4 and s.in_flight == 2 and s,
                            what="2 running and 2 prefetched")
            assert (snap.in_flight, snap.prefetched) == (2, 2)  # was in_flight 4
            line = format_line(Reading(snap, 1.0, 10.0, 10.0))
            assert re.search(r"\| in flight 2 \(\+2 prefetched\) \|", line), line
            gate.set()
            wait_for(lambda: worker.snapshot().done == 6)
    finally:
        gate.set()


def test_the_last_line_after_a_clean_stop_says_stopped(db: str) -> None:
    worker = brooq.Worker(db, concurrency=1, **FAST)

    @worker.handler("quick")
    def quick(job: brooq.Job) -> None:
        pass

    worker.declare_topics()
    stream = io.StringIO()
    progress = Progress(worker.snapshot, stream, live=False, log_every=60)
    with progress, running(worker):
        pass  # connected, then stopped cleanly by running()
    last = stream.getvalue().splitlines()[-1]
    assert last.endswith("| stopped"), last  # was "| (re)connecting": a worker between runs
