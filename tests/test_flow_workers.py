"""max_in_flight with real worker processes: three processes of
concurrency 4 on a topic limited to 3 jobs in flight. A sampler counts the topic's
`processing` jobs all along, and every handler execution writes its start and end
to an audit file: at no instant may more than 3 executions overlap."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import brooq
import psycopg
import pytest
from flow_app import LIMIT
from test_flow_races import Sampler
from helpers import wait_for

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
    runs = [(float(a), float(b)) for a, b, _ in (line.split() for line in audit.read_text().splitlines())]
    overlap = max_overlap(runs)
    print(f"\nworker processes: 3 x concurrency 4, {jobs} jobs, {len(runs)} executions, "
          f"{sampler.samples} samples; max observed in flight {sampler.max_seen}, "
          f"max overlapping executions {overlap} (limit {LIMIT})")
    assert len(runs) == jobs
    assert sampler.max_seen <= LIMIT
    assert overlap <= LIMIT
    assert overlap == LIMIT, "the limit was never reached: the test proves nothing"


def test_the_metrics_export_the_jobs_each_limit_holds_back(db: str, conn: psycopg.Connection[Any]) -> None:
    """brooq_jobs_held{topic,limit} comes from topic_stats' held_by_* (one source)."""
    import threading
    from datetime import timedelta

    from test_worker_metrics import scrape
    from helpers import running

    release = threading.Event()
    worker = brooq.Worker(db, concurrency=4, lease=timedelta(seconds=2),
                          poll_interval=timedelta(milliseconds=100),
                          stats_interval=timedelta(milliseconds=200), metrics_address="127.0.0.1:0")

    @worker.handler("held", max_in_flight=1)
    def held(job: brooq.Job) -> None:
        release.wait(10)

    @worker.handler("grouped")
    def grouped(job: brooq.Job) -> None:
        release.wait(10)

    worker.declare_topics()
    brooq.enqueue_many(conn, "held", [{}] * 3)
    brooq.enqueue_many(conn, "grouped", [{}] * 3, groups=["a", "a", "b"])
    try:
        with running(worker):
            url = worker.metrics_url
            assert url is not None
            wait_for(lambda: worker.snapshot().claimed == 3, what="one held job and two first jobs")

            def held_now() -> dict[tuple[str, str], float]:
                m = scrape(url)
                return {(dict(k)["topic"], dict(k)["limit"]): v
                        for (name, k), v in m.items() if name == "brooq_jobs_held"}

            wait_for(lambda: held_now()[("held", "in_flight")] == 2, what="the gauge to be refreshed")
            gauges = held_now()
            release.set()
    finally:
        release.set()
    assert gauges[("held", "in_flight")] == 2
    assert gauges[("grouped", "group")] == 1
    assert gauges[("held", "rate")] == 0 and gauges[("grouped", "in_flight")] == 0
    stats = {s.topic: s for s in brooq.topic_stats(conn)}
    assert stats["held"].max_in_flight == 1


class Resilient(Sampler):
    """A Sampler that reconnects when PostgreSQL restarts under it."""

    query = "select count(*) from brooq.job where topic = %s and state = 'processing'"

    def run(self) -> None:
        while not self.halt.is_set():
            try:
                with psycopg.connect(self.dsn, autocommit=True, connect_timeout=2) as c:
                    while not self.halt.is_set():
                        row = c.execute(self.query, (self.topic,)).fetchone()
                        assert row is not None
                        self.samples += 1
                        self.max_seen = max(self.max_seen, row[0])
            except psycopg.OperationalError:
                time.sleep(0.05)


class ResilientGroups(Resilient):
    query = ("select coalesce(max(n), 0) from (select count(*) as n from brooq.job where topic = %s"
             " and state = 'processing' group by group_key) as g")


@pytest.mark.long
def test_limits_hold_across_a_reap_storm_and_a_postgresql_restart(
        db: str, conn: psycopg.Connection[Any], server: Any, tmp_path: Path) -> None:
    """Three worker processes on a topic limited to 3 in flight, its jobs in 10 ordered
    groups; two workers are killed (their leases expire and are reaped) and replaced,
    then PostgreSQL restarts. Sampled all along: at most 3 processing, at most 1 per
    group; the audit of executions: at most 3 overlapping, at most 1 per group."""
    audit = tmp_path / "executions"
    brooq.declare_topic(conn, "limited", max_in_flight=LIMIT)
    jobs = 400
    brooq.enqueue_many(conn, "limited", [{"seconds": 0.03, "group": f"g{i % 10}"} for i in range(jobs)],
                       groups=[f"g{i % 10}" for i in range(jobs)])

    def start(name: str) -> subprocess.Popen[str]:
        return subprocess.Popen([sys.executable, str(APP), db, name, str(audit)],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def done() -> int:
        try:
            with psycopg.connect(db, autocommit=True, connect_timeout=2) as c:
                row = c.execute("select count(*) from brooq.job where state = 'done'").fetchone()
                return int(row[0]) if row else 0
        except psycopg.OperationalError:  # restarting
            return -1

    procs = [start(f"storm-{i}") for i in range(3)]
    try:
        with Resilient(db, "limited") as sampler, ResilientGroups(db, "limited") as groups:
            wait_for(lambda: done() >= 60, timeout=60, what="some progress")

            def held_by_victims() -> bool:
                with psycopg.connect(db, autocommit=True) as c:
                    row = c.execute("select count(*) from brooq.job where locked_by in ('storm-0', 'storm-1')"
                                    " and state = 'processing'").fetchone()
                    return bool(row and row[0] >= 2)
            wait_for(held_by_victims, timeout=60, what="the victims to hold jobs")
            for p in procs[:2]:
                p.kill()  # their jobs stay processing until their leases expire: reaped
            procs += [start("storm-3"), start("storm-4")]
            wait_for(lambda: done() >= 150, timeout=60, what="progress after the kills")
            if server.cluster is not None:
                server.cluster.restart("fast")
            wait_for(lambda: done() == jobs, timeout=180, what="every job done")
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
        for p in procs:
            p.communicate(timeout=20)
    lines = [line.split() for line in audit.read_text().splitlines()]
    overlap = max_overlap([(float(a), float(b)) for a, b, _ in lines])
    per_group = max(max_overlap([(float(a), float(b)) for a, b, g in lines if g == k])
                    for k in {g for _, _, g in lines})
    with psycopg.connect(db, autocommit=True) as c:  # the fixture's connection died in the restart
        reaped = c.execute("select count(*) from brooq.job where last_error like 'lease of worker%'").fetchone()
    print(f"\nreap storm and restart: {jobs} jobs in 10 groups, {len(lines)} executions, "
          f"{reaped[0] if reaped else 0} jobs reaped; {sampler.samples} samples: max in flight "
          f"{sampler.max_seen} (limit {LIMIT}), max of one group {groups.max_seen}; overlapping "
          f"executions {overlap}, of one group {per_group}")
    assert reaped and reaped[0] >= 2, "no lease was reaped: the storm did not happen"
    assert sampler.max_seen <= LIMIT
    assert groups.max_seen <= 1
    assert overlap <= LIMIT
    assert per_group <= 1
