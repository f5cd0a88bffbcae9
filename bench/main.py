"""The benchmark's orchestrator: one cluster, every system, every scenario, one table.

    bash bench/run [--smoke] [--only brooq,pgqueuer] [--runs N] [--scenarios drain,latency]
    bash bench/run soak|deep|snapshot --help     the long runs (bench/soak.py, deep.py, snapshot.py)
    bash bench/run workflows --help             dependency patterns, brooq and pg-boss (bench/workflows.py)
    bash bench/run pressure --help              a held horizon, overload, a burst: brooq, graphile-worker,
                                                PgQue side by side (bench/pressure.py)

Scenarios (docs/performance.md explains each figure):
  enqueue   bulk enqueue of N jobs (each system's fastest documented way) and single
            enqueues, one per transaction; brooq's single enqueue vs a bare INSERT
  drain     N ready jobs drained by one and by two worker processes (no-op handler);
            brooq also on a topic declared retain_done => false (done jobs deleted)
  latency   enqueue commit -> handler start at a steady 50 and 2,000 jobs/s
  ceiling   pgbench calling brooq's functions directly; brooq's drain as a share of it
  grown     1,000,000 terminal rows + N ready vs an empty table: claim, drain, topic_stats
  memory    peak RSS of one worker process draining N jobs (measured during `drain`)
  flow      brooq's flow control: one worker process draining N jobs with no
            limit, with a max_in_flight that does not bind, and spread over 1,000 ordered
            groups; each as a share of the first
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import psycopg

# The throwaway cluster is test infrastructure (tests/pgcluster.py), not part of brooq.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from pgcluster import Cluster, Container, choice, make_server  # noqa: E402

from bench.procs import WorkerFailed, Workers
from bench.progress import Progress
from bench.results import LOWER, Results
from bench.systems import BENCH, SYSTEMS, TOPIC, Brooq, BrooqProducer, System, brooq_worker, chunks

SCENARIOS = ["enqueue", "drain", "latency", "ceiling", "grown", "memory", "flow"]
# flow: (case, the handler's topic settings, ordered groups or 0); the first is the baseline
FLOW_CASES: tuple[tuple[str, dict[str, int], int], ...] = (
    ("no limit", {}, 0),
    ("max_in_flight 10,000, not binding", {"max_in_flight": 10_000}, 0),
    ("1,000 groups", {}, 1_000),
)


@dataclass
class Sizes:
    bulk: int = 100_000
    single: int = 2_000
    drain: int = 100_000
    drain_cap: float = 20.0  # seconds; slower systems report the rate of what they did
    rates: tuple[tuple[int, float], ...] = ((50, 6.0), (2000, 3.0))  # jobs/s, seconds
    ceiling_seconds: int = 5
    ceiling_batches: tuple[int, ...] = (100, 500)
    terminal: int = 1_000_000
    claims: int = 200


SMOKE = Sizes(bulk=300, single=20, drain=300, drain_cap=10.0, rates=((50, 0.4), (2000, 0.2)),
              ceiling_seconds=1, terminal=3_000, claims=10)


def log(msg: str) -> None:
    print(f"bench: {msg}", file=sys.stderr, flush=True)


class Bench:
    def __init__(self, args: argparse.Namespace, cluster: Cluster | Container) -> None:
        self.args = args
        self.cluster = cluster
        self.sizes = SMOKE if args.smoke else Sizes()
        if args.drain_cap:
            self.sizes.drain_cap = args.drain_cap
        self.results = Results()
        self.systems: dict[str, System] = {}
        self.skipped: dict[str, str] = {}

    # ------------------------------------------------------------------ set up
    def setup(self) -> None:
        created: set[str] = set()
        for name in self.args.only:
            cls = SYSTEMS[name]
            system = cls(self.cluster.dsn_for(cls.db))
            why = system.available()
            if why:
                self.skipped[name] = why
                log(f"skipping {name}: {why}")
                continue
            if cls.db not in created:
                with psycopg.connect(self.cluster.dsn, autocommit=True) as conn:
                    conn.execute(f"create database {cls.db}")
                t0 = time.monotonic()
                system.install()
                created.add(cls.db)
                log(f"installed {name} in database {cls.db} ({time.monotonic() - t0:.1f}s)")
            self.systems[name] = system

    def runs(self) -> range:
        return range(1, self.args.runs + 1)

    # ----------------------------------------------------------------- helpers
    def fill(self, system: System, n: int, label: str) -> None:
        """Reset the system and enqueue n ready jobs (bulk, not timed), then analyze."""
        system.reset()
        producer = system.open_producer()
        progress = Progress(label, self.args.quiet)
        t0 = time.monotonic()
        try:
            done = 0
            for chunk in chunks(range(n), system.bulk_batch):
                producer.bulk(chunk)
                done += len(chunk)
                progress.update(f"filling {done:,}/{n:,}", done, t0)
        finally:
            producer.close()
        system.analyze()

    # -------------------------------------------------------------- scenarios
    def enqueue(self) -> None:
        for run in self.runs():  # run-major: a noisy minute hits every system alike
            for name, system in self.systems.items():
                if not system.enqueue_owner:
                    self.enqueue_once(name, system, run)
        for system in self.systems.values():
            system.reset()

    def enqueue_once(self, name: str, system: System, run: int) -> None:
        s = self.sizes
        progress = Progress(f"enqueue {name} run {run}/{self.args.runs}", self.args.quiet)
        system.reset()
        producer = system.open_producer()
        try:
            t0 = time.monotonic()
            done = 0
            for chunk in chunks(range(s.bulk), system.bulk_batch):
                producer.bulk(chunk)
                done += len(chunk)
                progress.update(f"bulk {done:,}/{s.bulk:,}", done, t0)
            bulk = s.bulk / (time.monotonic() - t0)
            system.reset()
            # brooq: single enqueues and bare INSERTs alternate in chunks of 100, so
            # that both see the same disk (fsync time drifts a lot on a shared machine)
            baseline = producer.insert if isinstance(producer, BrooqProducer) else None
            spent = {"single": 0.0, "insert": 0.0}
            for start in range(0, s.single, 100):
                seqs = range(start, min(start + 100, s.single))
                t0 = time.monotonic()
                for i in seqs:
                    producer.single(i)
                spent["single"] += time.monotonic() - t0
                if baseline:
                    t0 = time.monotonic()
                    for i in seqs:
                        baseline(i)
                    spent["insert"] += time.monotonic() - t0
                progress.update(f"single {seqs[-1] + 1:,}/{s.single:,}")
            single = s.single / spent["single"]
        finally:
            producer.close()
        self.results.add("enqueue", f"bulk, {s.bulk:,} jobs", name, bulk, "jobs/s")
        self.results.add("enqueue", "single, 1 per commit", name, single, "jobs/s")
        extra = ""
        if baseline:
            insert = s.single / spent["insert"]
            self.results.add("enqueue", "bare INSERT, 1 per commit", name, insert, "rows/s")
            self.results.add("enqueue", "single enqueue / bare INSERT", name,
                             100 * single / insert, "%")
            extra = f", bare INSERT {insert:,.0f}/s"
        progress.done(f"bulk {bulk:,.0f}/s, single {single:,.0f}/s{extra}")

    def drain_once(self, system: System, procs: int, label: str,
                   cmd: list[str] | None = None) -> dict[str, float]:
        s = self.sizes
        self.fill(system, s.drain, label)
        progress = Progress(label, self.args.quiet)
        with Workers(cmd or system.worker_cmd(latency=False), procs) as workers:
            workers.wait_ready()
            complete = workers.wait_count(s.drain, s.drain_cap, progress)
            count, first, last = workers.span()
            rss = workers.peak_rss_mib()
        rate = count / ((last - first) / 1e9) if last > first else 0.0
        left = system.remaining()
        what = f"{count:,} jobs at {rate:,.0f}/s"
        if not complete:
            what += f" (stopped after {s.drain_cap:.0f}s)"
        progress.done(f"{what}, peak RSS {max(rss, default=0):.0f} MiB, {left:,} left unfinished")
        return {"rate": rate, "complete": float(complete), "count": count,
                "rss": max(rss, default=0.0)}

    def drain(self) -> None:
        s = self.sizes
        memory = "memory" in self.args.scenarios
        failed: set[tuple[str, int]] = set()
        for procs in (1, 2):
            for run in self.runs():  # run-major: a noisy minute hits every system alike
                for name, system in self.systems.items():
                    if (name, procs) in failed:
                        continue
                    label = f"drain {name} ×{procs} run {run}/{self.args.runs}"
                    try:
                        r = self.drain_once(system, procs, label)
                    except WorkerFailed as e:
                        log(f"{label} failed: {e}")
                        self.results.notes.append(f"{label} failed: {str(e)[-600:]}")
                        failed.add((name, procs))
                        continue
                    note = "" if r["complete"] else f"partial: drained for {s.drain_cap:.0f}s"
                    self.results.add("drain", f"{procs} worker process{'es' if procs > 1 else ''}",
                                     name, r["rate"], "jobs/s", note=note)
                    if procs == 1 and memory:
                        self.results.add("memory", "peak RSS, 1 worker draining", name,
                                         r["rss"], "MiB", better=LOWER)
                    if name == "brooq":
                        self.drain_unretained(system, procs, run, failed)
        for system in self.systems.values():
            system.reset()

    def drain_unretained(self, system: System, procs: int, run: int,
                         failed: set[tuple[str, int]]) -> None:
        """brooq's drain on a topic declared retain_done => false: settle_many
        deletes each job as it settles it done, instead of a second row version. The
        worker declares the topic so at start; the topic is declared again (retain_done
        true) after, for the other scenarios."""
        s = self.sizes
        key = ("brooq retain_done=false", procs)
        if key in failed:
            return
        label = f"drain brooq retain_done=false ×{procs} run {run}/{self.args.runs}"
        cmd = brooq_worker(system.dsn, latency=False, handler={"retain_done": False})
        try:
            r = self.drain_once(system, procs, label, cmd)
        except WorkerFailed as e:
            log(f"{label} failed: {e}")
            self.results.notes.append(f"{label} failed: {str(e)[-600:]}")
            failed.add(key)
            return
        finally:
            with psycopg.connect(system.dsn, autocommit=True) as conn:
                kept = conn.execute("select count(*) from brooq.job where state = 'done'").fetchone()
                conn.execute("select brooq.declare_topic(%s)", (TOPIC,))
        note = "" if r["complete"] else f"partial: drained for {s.drain_cap:.0f}s"
        if kept and kept[0]:
            note = (note + "; " if note else "") + f"{kept[0]:,} done rows kept"
        self.results.add("drain", f"{procs} worker process{'es' if procs > 1 else ''}, "
                         "retain_done => false", "brooq", r["rate"], "jobs/s", note=note)

    def latency(self) -> None:
        failed: set[str] = set()
        for run in self.runs():  # run-major: a noisy minute hits every system alike
            for name, system in self.systems.items():
                if name in failed:
                    continue
                label = f"latency {name} run {run}/{self.args.runs}"
                try:
                    self.latency_once(name, system, label)
                except WorkerFailed as e:
                    log(f"{label} failed: {e}")
                    self.results.notes.append(f"{label} failed: {str(e)[-600:]}")
                    failed.add(name)
        for system in self.systems.values():
            system.reset()

    def latency_once(self, name: str, system: System, label: str) -> None:
        system.reset()
        system.analyze()
        progress = Progress(label, self.args.quiet)
        producer = system.open_producer()
        try:
            with Workers(system.worker_cmd(latency=True), 1) as workers:
                workers.wait_ready()
                seq = 1_000_000_000  # warm-up jobs, not counted
                pace(producer, 50, 1.0 if not self.args.smoke else 0.2, seq, progress)
                seq = 0
                for rate, seconds in self.sizes.rates:
                    commits = pace(producer, rate, seconds, seq, progress)
                    deadline = time.monotonic() + 10
                    while time.monotonic() < deadline:
                        if all(k in workers.starts for k in commits):
                            break
                        workers.check_alive()
                        time.sleep(0.05)
                    lat = sorted((workers.starts[k] - t) / 1e6 for k, t in commits.items()
                                 if k in workers.starts)
                    lost = len(commits) - len(lat)
                    seq += len(commits)
                    if not lat:
                        continue
                    note = f"{lost} jobs not started within 10s" if lost else ""
                    for q, v in (("p50", pct(lat, 50)), ("p90", pct(lat, 90)),
                                 ("p99", pct(lat, 99)), ("max", lat[-1])):
                        self.results.add("latency", f"{rate:,}/s {q}", name, v, "ms",
                                         better=LOWER, note=note)
                    progress.done(f"{rate:,}/s: p50 {pct(lat, 50):.1f} ms, p99 {pct(lat, 99):.1f}"
                                  f" ms, max {lat[-1]:.1f} ms ({len(lat)} jobs"
                                  f"{f', {lost} lost' if lost else ''})")
        finally:
            producer.close()

    def pgbench(self, db: str, script: str, clients: int, seconds: int | None = None,
                transactions: int | None = None, **variables: int) -> float:
        """Run one pgbench script from bench/pgbench; its tps."""
        cmd = [str(self.cluster.bin / "pgbench"), "-n", "-M", "prepared", "-c", str(clients),
               "-j", str(clients), "-f", str(BENCH / "pgbench" / script),
               "-h", "127.0.0.1", "-p", str(self.cluster.port), "-U", "postgres"]
        cmd += ["-T", str(seconds)] if seconds else ["-t", str(transactions)]
        for k, v in variables.items():
            cmd += ["-D", f"{k}={v}"]
        out = subprocess.run(cmd + [db], capture_output=True, text=True, check=False)
        m = re.search(r"tps = ([0-9.]+) \(without initial connection time\)", out.stdout)
        if out.returncode != 0 or not m:
            raise RuntimeError(f"pgbench {script} failed:\n{out.stdout}\n{out.stderr}")
        return float(m.group(1))

    def ceiling(self) -> None:
        brooq = self.systems.get("brooq") or self.systems.get("brooq-sql")
        if brooq is None:
            return
        s = self.sizes
        for run in self.runs():
            label = f"ceiling run {run}/{self.args.runs}"
            progress = Progress(label, self.args.quiet)
            brooq.reset()
            enq = self.pgbench(Brooq.db, "enqueue_many.sql", 2, seconds=s.ceiling_seconds, batch=500)
            brooq.reset()
            one = self.pgbench(Brooq.db, "enqueue_one.sql", 2, seconds=s.ceiling_seconds)
            brooq.reset()
            ins = self.pgbench(Brooq.db, "insert_one.sql", 2, seconds=s.ceiling_seconds)
            # drain: exactly s.drain jobs, two clients taking b per claim until all are done
            drains = {}
            for b in s.ceiling_batches:
                self.fill(brooq, s.drain, label)
                per_client = -(-s.drain // (2 * b))
                tps = self.pgbench(Brooq.db, "claim_settle.sql", 2, transactions=per_client, batch=b)
                left = brooq.remaining()
                drains[b] = tps * b * (s.drain - left) / (2 * per_client * b)
            self.results.add("ceiling", "pgbench enqueue_many ×500, 2 clients", "brooq",
                             enq * 500, "jobs/s")
            self.results.add("ceiling", "pgbench enqueue, 1 per commit, 2 clients", "brooq",
                             one, "jobs/s")
            self.results.add("ceiling", "pgbench bare INSERT, 1 per commit, 2 clients", "brooq",
                             ins, "rows/s")
            for b, drain in drains.items():
                self.results.add("ceiling", f"pgbench claim ×{b} + settle_many, 2 clients", "brooq",
                                 drain, "jobs/s")
            progress.done(f"enqueue_many {enq * 500:,.0f}/s, enqueue {one:,.0f}/s, bare INSERT "
                          f"{ins:,.0f}/s, claim+settle_many "
                          + ", ".join(f"×{b} {d:,.0f} jobs/s" for b, d in drains.items()))
        brooq.reset()
        self.ceiling_shares()

    def ceiling_shares(self) -> None:
        """The Python worker's drain rate as a share of the best SQL ceiling (medians)."""
        figs = self.results.figures
        ceilings = [f for (sc, _, _), f in figs.items() if sc == "ceiling" and "claim" in f.metric]
        if not ceilings:
            return
        best = max(ceilings, key=lambda f: f.median)
        for name in ("brooq", "brooq-sql"):
            for procs in ("1 worker process", "2 worker processes"):
                drain = figs.get(("drain", procs, name))
                if drain and drain.runs:
                    self.results.add("ceiling", f"drain, {procs}, as share of the best ceiling",
                                     name, 100 * drain.median / best.median, "%")

    def grown(self) -> None:
        base = self.systems.get("brooq") or self.systems.get("brooq-sql")
        if base is None:
            return
        s = self.sizes
        grown_db = "bench_brooq_grown"
        with psycopg.connect(self.cluster.dsn, autocommit=True) as conn:
            conn.execute(f"create database {grown_db}")
        grown = type(base)(self.cluster.dsn_for(grown_db))
        grown.install()
        t0 = time.monotonic()
        with psycopg.connect(grown.dsn, autocommit=True) as conn:
            conn.execute(
                "insert into brooq.job (topic, payload, state, attempts, max_attempts, available_at,"
                " created_at, updated_at)"
                " select %s, jsonb_build_object('seq', g), 'done', 1, 5, now() - interval '1 day',"
                " now() - interval '1 day', now() - interval '1 day'"
                " from generate_series(1, %s) g", (TOPIC, s.terminal))
            conn.execute("vacuum analyze brooq.job")
            row = conn.execute("select max(id) from brooq.job").fetchone()
            watermark = int(row[0]) if row and row[0] else 0
        log(f"grown: {s.terminal:,} terminal rows loaded in {time.monotonic() - t0:.1f}s")

        def reset_grown() -> None:
            with psycopg.connect(grown.dsn, autocommit=True) as conn:
                conn.execute("delete from brooq.job where id > %s", (watermark,))
        grown.reset = reset_grown  # type: ignore[method-assign]

        for run in self.runs():
            for case, system in (("empty", base), ("grown", grown)):
                label = f"grown: {case} table run {run}/{self.args.runs}"
                self.fill(system, s.drain, label)
                claim_ms, stats_ms = probe(system.dsn, s.claims)
                r = self.drain_once(system, 1, label)
                tag = "empty table" if case == "empty" else f"+{s.terminal:,} terminal rows"
                self.results.add("grown", f"claim 1 job, median ({tag})", "brooq", claim_ms, "ms",
                                 better=LOWER)
                self.results.add("grown", f"topic_stats ({tag})", "brooq", stats_ms, "ms",
                                 better=LOWER)
                self.results.add("grown", f"drain, 1 worker process ({tag})", "brooq",
                                 r["rate"], "jobs/s")
                Progress(label).done(f"claim {claim_ms:.2f} ms, topic_stats {stats_ms:.1f} ms")
        base.reset()
        with psycopg.connect(self.cluster.dsn, autocommit=True) as conn:
            conn.execute(f"drop database {grown_db}")

    def flow(self) -> None:
        """One brooq worker process draining the same N jobs: no limit, a max_in_flight
        above anything the worker holds (its concurrency + prefetch is 400), 1,000 ordered groups."""
        base = self.systems.get("brooq")
        if base is None:
            return
        for run in self.runs():
            for case, settings, groups in FLOW_CASES:
                label = f"flow: {case} run {run}/{self.args.runs}"
                rate = self.flow_once(base, settings, groups, label)
                self.results.add("flow", f"drain, 1 worker process ({case})", "brooq", rate, "jobs/s")
        first = self.results.figures[("flow", f"drain, 1 worker process ({FLOW_CASES[0][0]})", "brooq")]
        for case, _, _ in FLOW_CASES[1:]:
            fig = self.results.figures[("flow", f"drain, 1 worker process ({case})", "brooq")]
            if first.median > 0:
                self.results.add("flow", f"{case}, as share of no limit", "brooq",
                                 100 * fig.median / first.median, "%")
        with psycopg.connect(base.dsn, autocommit=True) as conn:
            conn.execute("select brooq.declare_topic(%s)", (TOPIC,))
        base.reset()

    def flow_once(self, system: System, settings: dict[str, int], groups: int, label: str) -> float:
        import brooq

        s = self.sizes
        system.reset()
        with psycopg.connect(system.dsn, autocommit=True) as conn:
            brooq.declare_topic(conn, TOPIC, **settings)  # type: ignore[arg-type]
            for chunk in chunks(range(s.drain), system.bulk_batch):
                brooq.enqueue_many(conn, TOPIC, [{"seq": i} for i in chunk],
                                   groups=[f"g{i % groups}" for i in chunk] if groups else None)
        system.analyze()
        progress = Progress(label, self.args.quiet)
        cmd = brooq_worker(system.dsn, latency=False, handler=settings)
        with Workers(cmd, 1) as workers:
            workers.wait_ready()
            complete = workers.wait_count(s.drain, s.drain_cap, progress)
            count, first, last = workers.span()
        rate = count / ((last - first) / 1e9) if last > first else 0.0
        progress.done(f"{count:,} jobs at {rate:,.0f}/s" + ("" if complete else " (partial)"))
        return rate

    # ------------------------------------------------------------------- run
    def run(self) -> None:
        order = ["enqueue", "drain", "latency", "ceiling", "grown", "flow"]
        for scenario in order:
            if scenario in self.args.scenarios or (scenario == "drain" and
                                                    "memory" in self.args.scenarios):
                t0 = time.monotonic()
                log(f"scenario {scenario}")
                getattr(self, scenario)()
                log(f"scenario {scenario} took {time.monotonic() - t0:.0f}s")


def pace(producer: Any, rate: int, seconds: float, seq0: int, progress: Progress) -> dict[int, int]:
    """Enqueue at a steady rate: job i is due at i/rate; whenever the producer is free it
    enqueues every job due in one transaction (single enqueue for one job, bulk for more).
    Returns seq -> commit time (monotonic ns, taken when the commit returned)."""
    n = int(rate * seconds)
    commits: dict[int, int] = {}
    t0 = time.monotonic()
    sent = 0
    while sent < n:
        due = min(n, int((time.monotonic() - t0) * rate) + 1)
        if due > sent:
            seqs = range(seq0 + sent, seq0 + due)
            if len(seqs) == 1:
                producer.single(seqs[0])
            else:
                producer.bulk(seqs)
            t = time.monotonic_ns()
            for k in seqs:
                commits[k] = t
            sent = due
            progress.update(f"{rate:,}/s: {sent:,}/{n:,} enqueued")
        next_at = t0 + (sent / rate)
        delay = max(next_at - time.monotonic(), 0.0)
        time.sleep(delay)
    return commits


def pct(sorted_values: list[float], p: float) -> float:
    if len(sorted_values) == 1:
        return sorted_values[0]
    k = (len(sorted_values) - 1) * p / 100
    lo = int(k)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (k - lo)


def probe(dsn: str, claims: int) -> tuple[float, float]:
    """Median time of claim (1 job, then settled) and of select * from brooq.topic_stats, ms."""
    times = []
    with psycopg.connect(dsn, autocommit=True) as conn:
        for _ in range(claims):
            t0 = time.perf_counter()
            row = conn.execute("select id, lease_token from brooq.claim('probe', %s, 1, '30s')",
                               ([TOPIC],), prepare=True).fetchone()
            times.append((time.perf_counter() - t0) * 1000)
            if row:
                conn.execute("select brooq.settle(%s, 'probe', %s, 'done')", (row[0], row[1]))
        stats = []
        for _ in range(5):
            t0 = time.perf_counter()
            conn.execute("select * from brooq.topic_stats").fetchall()
            stats.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times), statistics.median(stats)


def machine(cluster: Cluster | Container) -> dict[str, Any]:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        mem = Path("/proc/meminfo").read_text().splitlines()[0].split(":")[1].strip()
    except (OSError, IndexError):
        pass
    versions: dict[str, str | None] = {}
    for pkg in ("procrastinate", "pgqueuer", "psycopg", "brooq"):
        try:
            versions[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            versions[pkg] = None
    pkg_json = BENCH / "node_modules" / "graphile-worker" / "package.json"
    if pkg_json.exists():
        import json
        versions["graphile-worker"] = json.loads(pkg_json.read_text())["version"]
    node = subprocess.run(["node", "--version"], capture_output=True, text=True, check=False) \
        if _has("node") else None
    with psycopg.connect(cluster.dsn, autocommit=True) as conn:
        row = conn.execute("select version()").fetchone()
        settings: dict[str, str] = dict(conn.execute(
            "select name, setting from pg_settings where name in ('fsync', 'synchronous_commit',"
            " 'shared_buffers', 'max_connections', 'full_page_writes', 'wal_level')").fetchall())
    return {"cpu": cpu, "cores": os.cpu_count(), "memory": mem, "kernel": platform.release(),
            "python": platform.python_version(), "node": node.stdout.strip() if node else None,
            "postgresql": row[0] if row else None, "settings": settings, "versions": versions,
            "server": (f"container {cluster.image}" if isinstance(cluster, Container)
                       else "local cluster"),
            "load_average_at_start": os.getloadavg()}


def _has(cmd: str) -> bool:
    from shutil import which
    return which(cmd) is not None


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="bench/run", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--smoke", action="store_true", help="tiny N, 1 run: seconds, not minutes")
    p.add_argument("--only", default=",".join(SYSTEMS),
                   help=f"systems, comma-separated (default: {','.join(SYSTEMS)})")
    p.add_argument("--runs", type=int, help="runs per figure (default 3; --smoke: 1)")
    p.add_argument("--scenarios", default=",".join(SCENARIOS),
                   help=f"comma-separated (default: {','.join(SCENARIOS)})")
    p.add_argument("--drain-cap", type=float, default=None,
                   help="seconds a drain may run before its rate is taken as is (default 20)")
    p.add_argument("--json", type=Path, help="where to write the results "
                   "(default bench/results/<timestamp>.json)")
    p.add_argument("--quiet", action="store_true", help="no live progress")
    p.add_argument("--postgres", default=None, metavar="WHERE",
                   help="the server: local (the throwaway cluster, the default), container:17 "
                        "(tests/images/build's image) or container:<image>; default "
                        "$BROOQ_TEST_POSTGRES, as for the tests")
    args = p.parse_args(argv)
    if args.postgres:
        os.environ["BROOQ_TEST_POSTGRES"] = args.postgres
    try:
        args.postgres = choice()
    except ValueError as e:
        p.error(str(e))
    args.only = [s.strip() for s in args.only.split(",") if s.strip()]
    if "brooq" in args.only and "brooq-sql" not in args.only and args.only != ["brooq"]:
        pass
    unknown = [s for s in args.only if s not in SYSTEMS]
    args.scenarios = [s.strip() for s in args.scenarios.split(",") if s.strip()]
    unknown_sc = [s for s in args.scenarios if s not in SCENARIOS]
    if unknown or unknown_sc:
        p.error(f"unknown systems {unknown} or scenarios {unknown_sc}")
    if args.runs is None:
        args.runs = 1 if args.smoke else 3
    return args


COMMANDS = {"soak": "bench.soak", "deep": "bench.deep", "snapshot": "bench.snapshot",
            "workflows": "bench.workflows", "pressure": "bench.pressure"}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in COMMANDS:  # the long runs: python -m bench soak|deep|snapshot|workflows|pressure
        import importlib
        return int(importlib.import_module(COMMANDS[argv[0]]).main(argv[1:]))
    args = parse(argv)
    started = dt.datetime.now(dt.UTC)
    stamp = started.strftime("%Y%m%dT%H%M%SZ")
    out = args.json or BENCH / "results" / f"{stamp}{'-smoke' if args.smoke else ''}.json"
    t0 = time.monotonic()
    log(f"starting PostgreSQL ({args.postgres}; fsync on, synchronous_commit on)")
    with make_server(durable=True, which=args.postgres) as cluster:
        if isinstance(cluster, Container):
            log(cluster.describe())
        bench = Bench(args, cluster)
        meta = machine(cluster)
        meta |= {"started": started.isoformat(), "args": vars(args) | {"json": str(out)},
                 "sizes": vars(bench.sizes)}
        bench.setup()
        try:
            bench.run()
        except KeyboardInterrupt:
            log("interrupted: printing what was measured so far")
        meta["seconds"] = round(time.monotonic() - t0, 1)
        meta["load_average_at_end"] = os.getloadavg()
        meta["skipped"] = bench.skipped
    table = bench.results.table(list(SYSTEMS))
    print()
    print(f"brooq benchmark, {stamp}: median (min–max) of {args.runs} run(s);"
          f" * = see notes; last column > 1 means brooq is better")
    print(f"on {str(meta['postgresql']).split(' on ')[0]}, {meta['server']}")
    print(table)
    notes = sorted({f"{f.system} {f.metric}: {f.note}" for f in bench.results.figures.values()
                    if f.note}) + bench.results.notes
    notes += [f"{k} skipped: {v}" for k, v in bench.skipped.items()]
    for n in notes:
        print(f"  * {n}")
    bench.results.write_json(out, meta)
    print(f"\nwrote {out.relative_to(BENCH.parent) if out.is_relative_to(BENCH.parent) else out}"
          f" ({meta['seconds']:.0f}s)")
    return 0
