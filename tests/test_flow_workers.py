"""max_in_flight with real worker processes (issue 14): three processes of
concurrency 4 on a topic limited to 3 jobs in flight. A sampler counts the topic's
`processing` jobs all along, and every handler execution writes its start and end
to an audit file: at no instant may more than 3 executions overlap."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import brooq
import psycopg
import pytest
from flow_app import LIMIT
from test_flow_races import Sampler
from worker_app import wait_for

APP = Path(__file__).with_name("flow_app.py")

pytestmark = pytest.mark.slow


def max_overlap(intervals: list[tuple[float, float]]) -> int:
    """The most intervals open at one instant (an end before a start at the same instant)."""
    events = sorted([(s, 1) for s, _ in intervals] + [(e, -1) for _, e in intervals],
                    key=lambda ev: (ev[0], ev[1]))
    open_now = peak = 0
    for _, step in events:
        open_now += step
        peak = max(peak, open_now)
    return peak


def test_three_worker_processes_never_run_more_than_max_in_flight(
        db: str, conn: psycopg.Connection[Any], tmp_path: Path) -> None:
    audit = tmp_path / "executions"
    brooq.declare_topic(conn, "limited", max_in_flight=LIMIT)
    jobs = 150
    brooq.enqueue_many(conn, "limited", [{"seconds": 0.02}] * jobs)
    procs = [subprocess.Popen([sys.executable, str(APP), db, f"flow-{i}", str(audit)],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for i in range(3)]
    try:
        with Sampler(db, "limited") as sampler:
            wait_for(lambda: conn.execute("select count(*) from brooq.job where state = 'done'")
                     .fetchone() == (jobs,), timeout=60, what="every job done")
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.communicate(timeout=20)
    runs = [(float(a), float(b)) for a, b in (line.split() for line in audit.read_text().splitlines())]
    overlap = max_overlap(runs)
    print(f"\nworker processes: 3 x concurrency 4, {jobs} jobs, {len(runs)} executions, "
          f"{sampler.samples} samples; max observed in flight {sampler.max_seen}, "
          f"max overlapping executions {overlap} (limit {LIMIT})")
    assert len(runs) == jobs
    assert sampler.max_seen <= LIMIT
    assert overlap <= LIMIT
    assert overlap == LIMIT, "the limit was never reached: the test proves nothing"
