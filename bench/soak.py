"""The soak: a steady mixed load for minutes, brooq then graphile-worker, on one server.

    python -m bench soak --minutes 60                 (or: bash bench/run soak --minutes 60)
    python -m bench soak --minutes 0.2 --every 2s --only brooq     a smoke run

A producer enqueues at a fixed rate (--rate jobs/s; each job with an idempotency key
and one of three priorities); one worker process runs handlers that sleep 1-20 ms
(the payload says how long), and the first attempt of 5% of the jobs fails and is
retried (brooq: backoff_base 1 s; graphile-worker: its own backoff). brooq's topic
keeps finished jobs for --retention (a sixth of the run by default) and the bench
purges what is due every interval (`brooq.purge`, as the pg_cron job `brooq_purge`
would); graphile-worker deletes a job when it completes. Every --every (60 s) it
records: enqueue-commit -> handler-start latency p50/p99 (first attempts), jobs/s,
the worker's RSS, the job table's heap and index bytes, its dead tuples, autovacuum
runs, PostgreSQL's CPU per job, the ready backlog. It writes the JSON to
bench/results/<timestamp>-soak.json, a PNG per figure beside it (both systems on
one chart; needs matplotlib, bench/requirements.txt), and prints
the targets as PASS/FAIL lines scaled to the run's length.
"""

from __future__ import annotations

import argparse
import os
import threading
import time
from array import array
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from bench.longrun import (
    Server,
    installed_brooq,
    log,
    output,
    pct,
    postgres_cpu,
    public_args,
    refused_dsn,
    server,
    shown,
    table_stats,
    verdict,
    write,
)
from bench.procs import Workers
from bench.systems import BENCH, Graphile, python_worker

SOAK_TOPIC = "soak"
FAIL_EVERY = 20  # 5% of the jobs fail their first attempt
CONCURRENCY = 24  # handlers at once, every system (graphile-worker's concurrentJobs)

FIGURES: dict[str, tuple[str, str]] = {  # sample field -> (chart title, unit)
    "p50_ms": ("end-to-end latency p50 (enqueue commit -> handler start)", "ms"),
    "p99_ms": ("end-to-end latency p99 (enqueue commit -> handler start)", "ms"),
    "jobs_per_s": ("throughput (first attempts started)", "jobs/s"),
    "rss_mib": ("worker RSS", "MiB"),
    "heap_mib": ("job table heap (with TOAST)", "MiB"),
    "index_mib": ("job table indexes", "MiB"),
    "dead_tuples": ("job table dead tuples", "tuples"),
    "autovacuum_runs": ("autovacuum runs on the job table (cumulative)", "runs"),
    "pg_cpu_us_per_job": ("PostgreSQL CPU per job", "µs"),
    "backlog": ("ready jobs not yet claimed", "jobs"),
}


def job(seq: int) -> tuple[dict[str, Any], str, int]:
    """Job seq's payload, idempotency key and priority: the same for every system.
    Handler time 1-20 ms spread evenly; every 20th job fails once."""
    ms = 1 + (seq * 7) % 20
    return {"seq": seq, "ms": ms, "fail": seq % FAIL_EVERY == 3}, f"soak-{seq}", seq % 3


# ------------------------------------------------------------------ the systems

class SoakSystem:
    name = ""
    table = ""
    backlog_sql = ""

    def __init__(self, server: Server, args: argparse.Namespace) -> None:
        self.server = server
        self.args = args
        self.dsn = ""

    def install(self) -> None:
        raise NotImplementedError

    def worker_cmd(self) -> list[str]:
        raise NotImplementedError

    def enqueue(self, conn: psycopg.Connection[Any], seqs: Sequence[int]) -> None:
        raise NotImplementedError

    def purge(self, conn: psycopg.Connection[Any]) -> int:
        return 0


class BrooqSoak(SoakSystem):
    name = "brooq"
    table = "brooq.job"
    backlog_sql = ("select count(*) from brooq.job where state in ('pending', 'failed')"
                   " and available_at <= now()")

    def install(self) -> None:
        import brooq
        self.dsn = self.server.create_db("soak_brooq")
        installed_brooq(self.dsn)
        with psycopg.connect(self.dsn, autocommit=True) as conn:  # as the worker declares it
            brooq.declare_topic(conn, SOAK_TOPIC, retention=timedelta(seconds=self.args.retention),
                                backoff_base=timedelta(seconds=1))

    def worker_cmd(self) -> list[str]:
        # the worker declares the topic at start: retention and the first retry's delay
        handler = {"retention": self.args.retention, "backoff_base": 1.0}
        return python_worker("brooq_worker", {"dsn": self.dsn, "latency": True, "soak": True,
                                              "topic": SOAK_TOPIC, "concurrency": CONCURRENCY,
                                              "handler": handler})

    def enqueue(self, conn: psycopg.Connection[Any], seqs: Sequence[int]) -> None:
        import brooq
        jobs = [job(s) for s in seqs]
        if len(jobs) == 1:
            payload, key, priority = jobs[0]
            brooq.enqueue(conn, SOAK_TOPIC, payload, key=key, priority=priority)
            return
        with conn.transaction():  # enqueue_many takes one priority: a call per priority
            for prio in sorted({j[2] for j in jobs}):
                part = [j for j in jobs if j[2] == prio]
                brooq.enqueue_many(conn, SOAK_TOPIC, [j[0] for j in part],
                                   keys=[j[1] for j in part], priority=prio)

    def purge(self, conn: psycopg.Connection[Any]) -> int:
        """Every due job, a batch at a time (what `call brooq.purge_all()` does)."""
        total = 0
        while True:
            row = conn.execute("select brooq.purge(10000)").fetchone()
            n = int(row[0]) if row else 0
            total += n
            if n < 10000:
                return total


class GraphileSoak(SoakSystem):
    name = "graphile"
    table = "graphile_worker._private_jobs"
    backlog_sql = ("select count(*) from graphile_worker._private_jobs"
                   " where locked_at is null and run_at <= now() and attempts < max_attempts")
    batched = False

    def install(self) -> None:
        self.dsn = self.server.create_db("soak_graphile")
        g = Graphile(self.dsn)
        g.batched = self.batched
        g.install()

    def worker_cmd(self) -> list[str]:
        g = Graphile(self.dsn)
        g.batched = self.batched
        return ["node", str(BENCH / "workers" / "graphile_worker.mjs"),
                g._cfg(latency=True, soak=True, concurrency=CONCURRENCY)]

    def enqueue(self, conn: psycopg.Connection[Any], seqs: Sequence[int]) -> None:
        # graphile-worker runs the lowest priority number first: brooq's 2 is its -2
        jobs = [job(s) for s in seqs]
        if len(jobs) == 1:
            payload, key, priority = jobs[0]
            conn.execute("select id from graphile_worker.add_job('noop', %s::json, job_key => %s,"
                         " priority => %s)", (Jsonb(payload), key, -priority), prepare=True)
            return
        conn.execute(
            "select id from graphile_worker.add_jobs(array("
            "select row('noop', p, null, null, null, k, -pr, null)::graphile_worker.job_spec"
            " from unnest(%s::json[], %s::text[], %s::int[]) as u(p, k, pr)))",
            ([Jsonb(j[0]) for j in jobs], [j[1] for j in jobs], [j[2] for j in jobs]),
            prepare=True).fetchall()


class GraphileBatchedSoak(GraphileSoak):
    name = "graphile-batched"
    batched = True


SOAK_SYSTEMS: dict[str, type[SoakSystem]] = {
    s.name: s for s in (BrooqSoak, GraphileSoak, GraphileBatchedSoak)}


# --------------------------------------------------------------------- the run

@dataclass
class Sample:
    """One interval of one system's soak; cumulative figures as of its end."""
    minute: float  # end of the interval, minutes since the load began
    seconds: float
    enqueued: int
    attempts: int  # handler starts in the interval, retries included
    jobs: int  # first attempts started in the interval
    jobs_per_s: float
    p50_ms: float | None
    p99_ms: float | None
    rss_mib: float
    heap_mib: float
    index_mib: float
    live_tuples: int
    dead_tuples: int
    autovacuum_runs: int
    autoanalyze_runs: int
    pg_cpu_s: float | None
    pg_cpu_us_per_job: float | None
    backlog: int
    purged: int


@dataclass
class Run:
    system: str
    samples: list[Sample] = field(default_factory=list)
    latencies: list[array[float]] = field(default_factory=list)  # ms, per interval
    retention_starts: float = 0.0  # minute from which retention holds the table level
    notes: list[str] = field(default_factory=list)


class Producer(threading.Thread):
    """Enqueues at a fixed rate until stopped: job i is due at i/rate; whenever it is
    free, every job due in one transaction. Records seq -> commit time (monotonic ns)."""

    def __init__(self, system: SoakSystem, rate: float) -> None:
        super().__init__(daemon=True)
        self.system = system
        self.rate = rate
        self.commits: dict[int, int] = {}
        self.sent = 0
        self.halt = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            with psycopg.connect(self.system.dsn, autocommit=True) as conn:
                t0 = time.monotonic()
                while not self.halt.is_set():
                    due = int((time.monotonic() - t0) * self.rate) + 1
                    if due > self.sent:
                        due = min(due, self.sent + 1000)
                        seqs = range(self.sent, due)
                        self.system.enqueue(conn, seqs)
                        t = time.monotonic_ns()
                        for k in seqs:
                            self.commits[k] = t
                        self.sent = due
                    time.sleep(max(t0 + self.sent / self.rate - time.monotonic(), 0.0))
        except BaseException as e:  # noqa: BLE001 - reported by the sampler
            self.error = e


def soak_one(system: SoakSystem, args: argparse.Namespace, postmaster: int | None) -> Run:
    run = Run(system.name)
    system.install()
    every, total = args.every, args.minutes * 60
    intervals = max(1, round(total / every))
    run.retention_starts = (args.retention + every) / 60 if system.name == "brooq" else every / 60
    with Workers(system.worker_cmd(), 1) as workers, \
            psycopg.connect(system.dsn, autocommit=True) as conn:
        workers.wait_ready()
        producer = Producer(system, args.rate)
        unmatched: dict[int, int] = {}
        t0 = time.monotonic()
        cpu0 = postgres_cpu(postmaster)
        count0 = workers.count
        producer.start()
        for i in range(1, intervals + 1):
            time.sleep(max(0.0, t0 + i * every - time.monotonic()))
            if producer.error:
                raise RuntimeError(f"{system.name}: the producer failed: {producer.error}")
            workers.check_alive()
            now = time.monotonic()
            unmatched |= workers.take_starts()
            lat = array("f")
            for seq in list(unmatched):
                commit = producer.commits.pop(seq, None)
                if commit is not None:
                    lat.append((unmatched.pop(seq) - commit) / 1e6)
            count = workers.count
            cpu = postgres_cpu(postmaster)
            purged = system.purge(conn)
            stats = table_stats(conn, system.table)
            row = conn.execute(system.backlog_sql).fetchone()
            seconds = now - (t0 + (i - 1) * every)
            cpu_s = (cpu - cpu0) if cpu is not None and cpu0 is not None else None
            s = Sample(
                minute=round((now - t0) / 60, 3), seconds=round(seconds, 3),
                enqueued=producer.sent, attempts=count - count0, jobs=len(lat),
                jobs_per_s=len(lat) / seconds, p50_ms=pct(lat, 50), p99_ms=pct(lat, 99),
                rss_mib=round(workers.rss_mib(), 2), heap_mib=stats["heap_bytes"] / 2**20,
                index_mib=stats["index_bytes"] / 2**20, live_tuples=stats["live_tuples"],
                dead_tuples=stats["dead_tuples"], autovacuum_runs=stats["autovacuum_runs"],
                autoanalyze_runs=stats["autoanalyze_runs"], pg_cpu_s=cpu_s,
                pg_cpu_us_per_job=(cpu_s * 1e6 / len(lat)) if cpu_s is not None and lat else None,
                backlog=int(row[0]) if row else 0, purged=purged)
            run.samples.append(s)
            run.latencies.append(lat)
            cpu0, count0 = cpu, count
            # starts never matched after two intervals are not ours (cannot happen; kept small)
            stale = [k for k, v in unmatched.items() if v < time.monotonic_ns() - 2 * every * 1e9]
            for k in stale:
                unmatched.pop(k)
            if not args.quiet:
                log(f"soak {system.name} {s.minute:5.1f} min: {s.jobs_per_s:,.0f} jobs/s, p50 "
                    f"{fmt(s.p50_ms)} p99 {fmt(s.p99_ms)} ms, RSS {s.rss_mib:.1f} MiB, heap "
                    f"{s.heap_mib:.1f} + index {s.index_mib:.1f} MiB, {s.dead_tuples:,} dead, "
                    f"{s.autovacuum_runs} autovacuums, PG {fmt(s.pg_cpu_us_per_job)} µs/job, "
                    f"backlog {s.backlog:,}, purged {purged:,}")
        producer.halt.set()
        producer.join(10)
    return run


def fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f}" if v >= 10 else f"{v:.2f}"


# ------------------------------------------------------------------ the targets

def targets(run: Run) -> list[dict[str, Any]]:
    """The targets over 60 minutes, scaled to the run: the first and last sixth
    (10 of 60 minutes), RSS after the first twelfth (5 of 60), sizes from the interval
    after retention starts deleting."""
    n = len(run.samples)
    out: list[dict[str, Any]] = []
    if not n:
        return out
    w = max(1, round(n / 6))
    span = f"{w} of {n} intervals"
    first = [x for a in run.latencies[:w] for x in a]
    last = [x for a in run.latencies[-w:] for x in a]
    p_first, p_last = pct(first, 99), pct(last, 99)
    ok = None if p_first is None or p_last is None else p_last <= 1.2 * p_first
    out.append({"target": "p99 of the last sixth within 20% of the first sixth",
                "ok": ok, "measured": f"{fmt(p_first)} -> {fmt(p_last)} ms ({span} each)"})
    r0 = max(1, round(n / 12))  # the RSS baseline: the end of the first twelfth
    base = run.samples[r0 - 1].rss_mib
    peak = max(s.rss_mib for s in run.samples[r0 - 1:])
    ok = peak - base < 5.0 if n > r0 else None
    out.append({"target": f"RSS growth under 5 MiB after minute {run.samples[r0 - 1].minute:.2f}",
                "ok": ok, "measured": f"{base:.1f} -> peak {peak:.1f} MiB (+{peak - base:.1f})"})
    after = [s for s in run.samples if s.minute > run.retention_starts]
    if len(after) >= 2 * w:
        a = max(s.heap_mib + s.index_mib for s in after[:w])
        b = max(s.heap_mib + s.index_mib for s in after[-w:])
        ok, measured = b <= 1.2 * a, f"heap+index {a:.1f} -> {b:.1f} MiB"
    else:
        ok, measured = None, (f"retention holds from minute {run.retention_starts:.2f}: "
                              f"too few intervals after it")
    out.append({"target": "table and index sizes level once retention starts (last sixth "
                "within 20% of the first sixth after it)", "ok": ok, "measured": measured})
    idle = [s.minute for s in run.samples if s.attempts == 0]
    out.append({"target": "no interval without progress", "ok": not idle,
                "measured": f"{len(idle)} of {n} intervals without a handler start"
                            + (f" (minutes {', '.join(f'{m:.1f}' for m in idle[:5])})" if idle else "")})
    return out


# ------------------------------------------------------------------- the plots

def plot(runs: list[dict[str, Any]], stem: Path) -> tuple[list[str], str | None]:
    """One PNG per figure, every system on it; ([paths], None) or ([], why not)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return [], "matplotlib is not installed (pip install -r bench/requirements.txt)"
    paths = []
    for key, (title, unit) in FIGURES.items():
        fig, ax = plt.subplots(figsize=(8, 4.5))
        for r in runs:
            pts = [(s["minute"], s[key]) for s in r["samples"] if s[key] is not None]
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=".", label=r["system"])
        ax.set_title(title)
        ax.set_xlabel("minutes")
        ax.set_ylabel(unit)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend()
        fig.tight_layout()
        path = stem.with_name(f"{stem.name}-{key}.png")
        fig.savefig(path, dpi=90)
        plt.close(fig)
        paths.append(str(path))
    return paths, None


# ------------------------------------------------------------------ entry point

def parse(argv: list[str]) -> argparse.Namespace:
    from bench.longrun import duration
    p = argparse.ArgumentParser(prog="python -m bench soak", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--minutes", type=float, default=60.0, help="per system (default 60)")
    p.add_argument("--every", type=duration, default=60.0,
                   help="the sampling interval: 60s (default), 10s, 500ms...")
    p.add_argument("--rate", type=float, default=500.0, help="jobs enqueued per second (500)")
    p.add_argument("--retention", type=duration, default=None,
                   help="brooq's retention of finished jobs (default: a sixth of the run)")
    p.add_argument("--only", default="brooq,graphile",
                   help=f"systems in turn, comma-separated: {', '.join(SOAK_SYSTEMS)}")
    p.add_argument("--dsn", help="a superuser DSN of a server on this machine to create the "
                   "databases on (default: a throwaway cluster)")
    p.add_argument("--json", type=Path, help="default bench/results/<timestamp>-soak.json")
    p.add_argument("--quiet", action="store_true", help="no line per interval")
    args = p.parse_args(argv)
    args.only = [s.strip() for s in args.only.split(",") if s.strip()]
    if bad := [s for s in args.only if s not in SOAK_SYSTEMS]:
        p.error(f"unknown systems {bad}")
    if why := refused_dsn(args.dsn):
        p.error(why)
    if args.retention is None:
        args.retention = args.minutes * 60 / 6
    return args


def main(argv: list[str]) -> int:
    args = parse(argv)
    out = output(args.json, "soak")
    t0 = time.monotonic()
    runs: list[dict[str, Any]] = []
    skipped: dict[str, str] = {}
    with server(args.dsn) as srv:
        postmaster = srv.postmaster_pid()
        settings = srv.settings()
        for name in args.only:
            cls = SOAK_SYSTEMS[name]
            if issubclass(cls, GraphileSoak):
                why = Graphile("").available()
                if why:
                    skipped[name] = why
                    log(f"soak: skipping {name}: {why}")
                    continue
            log(f"soak: {name} for {args.minutes:g} min at {args.rate:,.0f} jobs/s, "
                f"a sample every {args.every:g} s")
            run = soak_one(cls(srv, args), args, postmaster)
            runs.append({"system": run.system, "retention_starts_minute": run.retention_starts,
                         "targets": targets(run),
                         "samples": [asdict(s) for s in run.samples]})
    paths, why = plot(runs, out.with_suffix(""))
    data = {"meta": {"kind": "soak", "args": public_args(args) | {"json": str(out)},
                     "settings": settings, "seconds": round(time.monotonic() - t0, 1),
                     "cores": os.cpu_count(), "load_average_at_end": os.getloadavg(),
                     "fail_every": FAIL_EVERY, "concurrency": CONCURRENCY,
                     "handler_ms": "1-20", "skipped": skipped},
            "figures": list(FIGURES), "runs": runs, "plots": paths, "plots_skipped": why}
    write(out, data)
    print(f"soak, {args.minutes:g} min per system at {args.rate:,.0f} jobs/s, every {args.every:g} s"
          f" (the targets for 60 minutes, scaled: 'sixth' = 10 of 60 minutes):")
    for r in runs:
        for t in r["targets"]:
            print(f"  {verdict(t['ok']):4}  {r['system']}: {t['target']}: {t['measured']}")
    for name, reason in skipped.items():
        print(f"  {name} skipped: {reason}")
    print(f"wrote {shown(out)}" + (f" and {len(paths)} plots beside it" if paths else f" (no plots: {why})"))
    return 0
