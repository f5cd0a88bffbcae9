"""Pressure: each system's storage under a pinned MVCC horizon, an overload and a burst.

    python -m bench pressure --pgque-sql ~/src/pgque       (or: bash bench/run pressure ...)
    python -m bench pressure --clean 20s --hold 20s --after 20s --rr-hold 20s --rr-every 5s \\
        --burst-window 20s --only brooq,graphile           a short trial

Every scenario runs for every system in turn (--only; PgQue needs --pgque-sql, see
bench/pgque.py), one worker process each, on one throwaway cluster (or --dsn), from
a reset queue, in three phases: clean (--clean), pressure, after (--after), after an
unrecorded --warmup at the clean rate. A producer in this process offers jobs at a
steady rate (whatever is due enqueued in one transaction, one system's bulk call for
several); every job is a no-op with the payload {"seq": i}. The workers claim and
complete as fast as they can: brooq's SQL loop (bench/workers/brooq_sql.py: claim 100,
settle_many), graphile-worker's run() (24 at a time), PgQue's PgQ loop
(bench/workers/pgque_worker.py: next_batch, get_batch_events, finish_batch, and the
ticker pg_cron would run).

  idle-<rate>  a session in the system's database takes an XID (begin; select
               txid_current()) and stays idle in transaction for --hold; one scenario
               per rate of --rates (100 and 800 jobs/s)
  rr           four REPEATABLE READ transactions, one opened every --rr-every (15 s),
               each held --rr-hold (60 s): the horizon stays pinned from the first
               open to the last commit (3 x 15 + 60 s); at --rr-rate (the last of --rates)
  overload     each worker may start --capacity jobs/s (1,000; the same for every system);
               the producer offers half of that, 1.5x it for --hold, then half again.
               The backlog grows, then drains, by capacity/2 a second: a system that
               keeps its pace under its backlog is back in about --hold, so "after"
               lasts --hold + --after here
  burst        --burst jobs (50,000), bulk, as fast as the producer can, into a queue
               that gets --trickle jobs/s (50) all along; "pressure" lasts
               --burst-window (60 s). Also: the burst's enqueue and drain times, and the
               latency of the trickle's jobs committed while the burst drained

Every --every (5 s) it records for each system: jobs started per second (the handler
reports its start; a job is completed with its batch right after) and the rate
offered; latency p50 and p99 from the producer's commit returning to the handler's
start (CLOCK_MONOTONIC in both processes: bench/workers/report.py), over the jobs
started in the interval; dead tuples (n_dead_tup summed over the system's schema);
the backlog (jobs committed minus jobs started). "Back to baseline": seconds from the
end of the pressure (the burst's: its last commit) to the start of the first three
intervals in a row at baseline (p99 at most max(2 x clean p99, clean p99 + 5 ms) and
backlog at most max(2 x the clean phase's largest, 100)); "not within the run" when
none come.

What it cannot tell: a completion's own time (jobs/s counts starts; each system
completes a job with its batch, after its no-op handler); one system at a time beside
another on the same machine (they run in turn); the same concurrency (PgQue's
consumer reads one batch at a time, as PgQ's consumers do; graphile-worker runs 24
jobs at once, brooq's loop 100 a claim); where a slowdown comes from (the dead tuples
say what vacuum could not remove, not what a query read: the snapshot bench's EXPLAIN
does that for brooq).

It writes bench/results/<timestamp>-pressure.json, the summary table as
<timestamp>-pressure.md (also printed) and a PNG per scenario beside them (jobs/s,
latency, dead tuples, backlog over time, every system on each chart; matplotlib).
"""

from __future__ import annotations

import argparse
import math
import os
import threading
import time
from array import array
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import psycopg

from bench.longrun import (
    Server,
    duration,
    log,
    output,
    pct,
    public_args,
    refused_dsn,
    server,
    shown,
    write,
)
from bench.pgque import PgQue
from bench.procs import Workers
from bench.systems import BENCH, Brooq, Graphile, Producer, System, chunks, python_worker

SYSTEM_NAMES = ("brooq", "graphile", "pgque")
KINDS = ("idle", "rr", "overload", "burst")
BURST_SEQ0 = 1_000_000_000  # the burst's seqs, apart from the producer's
READERS = 4  # the rr scenario's REPEATABLE READ transactions
PHASES = ("clean", "pressure", "after")


# ------------------------------------------------------------------ the systems

@dataclass
class Subject:
    """A system under pressure: its System (install, reset, producer), the schema whose
    tables' dead tuples are summed, and its worker command for a capacity (None: as
    fast as it can)."""
    name: str
    system: System
    schema: str
    command: Callable[[float | None], list[str]]


def brooq_worker(dsn: str, capacity: float | None) -> list[str]:
    """brooq's SQL loop (claim 100, settle_many), as the drain's brooq-sql column."""
    return python_worker("brooq_sql", {"dsn": dsn, "latency": True, "batch": 100,
                                       "capacity": capacity})


def graphile_worker(system: Graphile, capacity: float | None) -> list[str]:
    """graphile-worker's run(), its default configuration (24 jobs at a time)."""
    return ["node", str(BENCH / "workers" / "graphile_worker.mjs"),
            system._cfg(latency=True, capacity=capacity)]


def pgque_worker(system: PgQue, capacity: float | None) -> list[str]:
    return system.worker_cmd(latency=True, capacity=capacity)


def subjects(srv: Server, args: argparse.Namespace) -> tuple[list[Subject], dict[str, str]]:
    """The systems of --only, each installed in a database of its own; and the skipped
    ones, with why."""
    out: list[Subject] = []
    skipped: dict[str, str] = {}
    for name in args.only:
        why = {"graphile": lambda: Graphile("").available(),
               "pgque": lambda: PgQue("", args.pgque_sql).available()}.get(name, lambda: None)()
        if why:
            skipped[name] = why
            continue
        dsn = srv.create_db(f"pressure_{name}")
        if name == "brooq":
            out.append(Subject(name, Brooq(dsn), "brooq", partial(brooq_worker, dsn)))
        elif name == "graphile":
            graphile = Graphile(dsn)
            out.append(Subject(name, graphile, "graphile_worker",
                               partial(graphile_worker, graphile)))
        else:
            pgque = PgQue(dsn, args.pgque_sql)
            out.append(Subject(name, pgque, "pgque", partial(pgque_worker, pgque)))
        out[-1].system.install()
        log(f"pressure: installed {name}")
    return out, skipped


def fresh(subject: Subject) -> None:
    """The jobs gone, by the system's own reset (brooq and graphile-worker: their job
    table truncated; PgQue: the queue dropped and made again), and nothing else: the
    small tables keep their dead tuples and statistics from the run before, as in a
    system that has been running. A VACUUM here would record their size of the
    moment: it made PgQue's batch query loop over its tick table, which the planner
    then took for one row while it grew by ten a second (latency grew by a second a
    second until autovacuum analyzed the table again, a minute later)."""
    subject.system.reset()


DEAD = """select coalesce(sum(n_dead_tup), 0)::bigint, coalesce(sum(autovacuum_count), 0)::bigint
  from pg_stat_user_tables where schemaname = %s"""


def dead_tuples(conn: psycopg.Connection[Any], schema: str) -> tuple[int, int]:
    """n_dead_tup and autovacuum runs, summed over the schema's tables, as the cumulative
    statistics have them: a PostgreSQL 15 backend flushes its counts when it goes idle,
    at most once a second (an idle one within 10 s), so the figure can be up to a
    second behind the tables. pg_stat_force_next_flush() would flush this backend's
    counts only, which count nothing here. Each call is its own transaction (autocommit),
    so it never reads a cached snapshot of the statistics."""
    row = conn.execute(DEAD, (schema,)).fetchone()
    return (int(row[0]), int(row[1])) if row else (0, 0)


# ------------------------------------------------------------------ the scenarios

@dataclass
class Plan:
    """One scenario: the phases' lengths (s), the rate offered in each (jobs/s), the
    workers' capacity, and what presses during the pressure phase."""
    scenario: str
    kind: str  # one of KINDS
    title: str
    lengths: tuple[float, float, float]
    rates: tuple[float, float, float]
    capacity: float | None = None

    @property
    def bounds(self) -> list[tuple[str, float, float]]:
        """(phase, start, end), seconds from the start of the clean phase."""
        out, at = [], 0.0
        for name, length in zip(PHASES, self.lengths):
            out.append((name, at, at + length))
            at += length
        return out

    @property
    def end(self) -> float:
        return sum(self.lengths)

    def segments(self, warmup: float, end: float) -> list[tuple[float, float, float]]:
        """(start, end, rate) of the producer's schedule: the warm-up at the clean rate,
        the after phase until `end` (the last interval's)."""
        out = [(-warmup, 0.0, self.rates[0])]
        out += [(a, b, self.rates[i]) for i, (_, a, b) in enumerate(self.bounds)]
        out[-1] = (out[-1][0], max(out[-1][1], end), out[-1][2])
        return out


def plans(args: argparse.Namespace) -> list[Plan]:
    out = []
    for rate in args.rates:
        out.append(Plan(f"idle-{rate:g}", "idle",
                        f"idle in transaction (an XID held {args.hold:g} s) at {rate:,.0f} jobs/s",
                        (args.clean, args.hold, args.after), (rate,) * 3))
    rr_len = (READERS - 1) * args.rr_every + args.rr_hold
    out.append(Plan("rr", "rr", f"{READERS} overlapping REPEATABLE READ transactions (each "
                    f"{args.rr_hold:g} s, one every {args.rr_every:g} s) at "
                    f"{args.rr_rate:,.0f} jobs/s",
                    (args.clean, rr_len, args.after), (args.rr_rate,) * 3))
    c = args.capacity
    out.append(Plan("overload", "overload",
                    f"overload: {1.5 * c:,.0f} jobs/s offered for {args.hold:g} s to workers of "
                    f"{c:,.0f} jobs/s, {c / 2:,.0f} before and after",
                    (args.clean, args.hold, args.hold + args.after), (c / 2, 1.5 * c, c / 2), c))
    out.append(Plan("burst", "burst", f"a burst of {args.burst:,} jobs into a queue at "
                    f"{args.trickle:g} jobs/s", (args.clean, args.burst_window, args.after),
                    (args.trickle,) * 3))
    return [p for p in out if p.kind in args.scenarios]


# ------------------------------------------------------------------ the load

class Offer(threading.Thread):
    """The producer: follows a schedule of rates; job i is due when the schedule has
    offered i jobs, and whatever is due is enqueued in one call (at most a bulk
    batch). Records seq -> the time its commit returned (monotonic ns)."""

    def __init__(self, system: System, t0: float,
                 segments: list[tuple[float, float, float]]) -> None:
        super().__init__(daemon=True)
        self.system, self.t0, self.segments = system, t0, segments
        self.commits: dict[int, int] = {}
        self.sent = 0
        self.halt = threading.Event()
        self.error: BaseException | None = None

    def due(self, t: float) -> int:
        return int(sum(r * max(0.0, min(t, b) - a) for a, b, r in self.segments))

    def rate(self, t: float) -> float:
        return next((r for a, b, r in self.segments if a <= t < b), self.segments[-1][2])

    def run(self) -> None:
        producer = self.system.open_producer()
        try:
            end = self.segments[-1][1]
            while not self.halt.is_set():
                now = time.monotonic() - self.t0
                if now >= end:
                    return
                target = self.due(now)
                if target > self.sent:
                    seqs = range(self.sent, min(target, self.sent + self.system.bulk_batch))
                    enqueue(producer, seqs, self.commits)
                    self.sent = seqs.stop
                    continue
                time.sleep(min(0.05, max(0.0005, 1.0 / self.rate(now))))
        except BaseException as e:  # noqa: BLE001 - reported by the sampler
            self.error = e
        finally:
            producer.close()


def enqueue(producer: Producer, seqs: range, commits: dict[int, int]) -> None:
    if len(seqs) == 1:
        producer.single(seqs[0])
    else:
        producer.bulk(seqs)
    t = time.monotonic_ns()
    for k in seqs:
        commits[k] = t


@dataclass
class Burst:
    """The burst's jobs, committed in bulk calls as fast as one connection can."""
    size: int
    commits: dict[int, int] = field(default_factory=dict)
    first: int = 0  # ns: the first call's start, the last commit's return
    last: int = 0
    started: int = 0  # of its jobs, by the workers
    last_start: int = 0

    def send(self, system: System) -> None:
        producer = system.open_producer()
        try:
            self.first = time.monotonic_ns()
            for chunk in chunks(range(BURST_SEQ0, BURST_SEQ0 + self.size), system.bulk_batch):
                enqueue(producer, chunk, self.commits)
            self.last = time.monotonic_ns()
        finally:
            producer.close()


def hold_xid(dsn: str, seconds: float) -> None:
    """A session that takes an XID and stays idle in transaction for `seconds`."""
    with psycopg.connect(dsn) as conn:
        conn.execute("select txid_current()")
        time.sleep(seconds)
        conn.rollback()


def hold_snapshot(dsn: str, seconds: float) -> None:
    """A REPEATABLE READ transaction whose snapshot (taken by its first statement) is
    held for `seconds`."""
    with psycopg.connect(dsn) as conn:
        conn.execute("set transaction isolation level repeatable read")
        conn.execute("select 1")
        time.sleep(seconds)
        conn.commit()


# ------------------------------------------------------------------ one run

@dataclass
class Run:
    """One scenario on one system: what it measured, interval by interval."""
    scenario: str
    system: str
    plan: Plan
    every: float
    series: list[dict[str, Any]] = field(default_factory=list)
    latencies: list[array[float]] = field(default_factory=list)  # ms, per interval
    started: list[int] = field(default_factory=list)  # jobs started, per interval
    pressure_end: float = 0.0  # s since the clean phase began
    burst: dict[str, Any] = field(default_factory=dict)


def run_one(subject: Subject, plan: Plan, args: argparse.Namespace) -> Run:
    """The scenario on one system: reset, a worker, the producer and the pressure in
    threads, a sample every --every from this thread."""
    fresh(subject)
    run = Run(plan.scenario, subject.name, plan, args.every)
    slots = max(1, math.ceil(plan.end / args.every - 1e-9))  # the after phase fills the last
    run.latencies = [array("f") for _ in range(slots)]
    run.started = [0] * slots
    _, p_start, p_end = plan.bounds[1]
    run.pressure_end = p_end
    burst = Burst(args.burst) if plan.kind == "burst" else None
    trickle: list[tuple[int, float]] = []  # the burst scenario: (commit ns, latency ms)
    errors: list[BaseException] = []

    with Workers(subject.command(plan.capacity), 1) as workers, \
            psycopg.connect(subject.system.dsn, autocommit=True) as conn:
        workers.wait_ready()
        t0 = time.monotonic() + args.warmup
        offer = Offer(subject.system, t0, plan.segments(args.warmup, slots * args.every))

        def at(offset: float, fn: Callable[..., None], *a: Any) -> threading.Thread:
            def go() -> None:
                time.sleep(max(0.0, t0 + offset - time.monotonic()))
                try:
                    fn(*a)
                except BaseException as e:  # noqa: BLE001 - raised below
                    errors.append(e)
            return threading.Thread(target=go, daemon=True)

        dsn = subject.system.dsn
        pressers = []
        if plan.kind == "idle":
            pressers.append(at(p_start, hold_xid, dsn, p_end - p_start))
        elif plan.kind == "rr":
            pressers += [at(p_start + i * args.rr_every, hold_snapshot, dsn, args.rr_hold)
                         for i in range(READERS)]
        elif burst is not None:
            pressers.append(at(p_start, burst.send, subject.system))
        offer.start()
        for t in pressers:
            t.start()

        def collect() -> None:
            for seq, started in workers.take_starts().items():
                commit = offer.commits.get(seq) or (burst.commits.get(seq) if burst else None)
                k = int((started / 1e9 - t0) // args.every)
                if commit is None or not 0 <= k < slots:
                    continue
                ms = (started - commit) / 1e6
                run.latencies[k].append(ms)
                run.started[k] += 1
                if burst is not None and seq < BURST_SEQ0:
                    trickle.append((commit, ms))
                elif burst is not None:
                    burst.started += 1
                    burst.last_start = max(burst.last_start, started)

        for k in range(slots):
            time.sleep(max(0.0, t0 + (k + 1) * args.every - time.monotonic()))
            if offer.error or errors:
                raise RuntimeError(f"pressure {plan.scenario} {subject.name}: "
                                   f"{offer.error or errors[0]!r}")
            workers.check_alive()
            collect()
            dead, autovacuums = dead_tuples(conn, subject.schema)
            sent = offer.sent + (len(burst.commits) if burst else 0)
            mid = (k + 0.5) * args.every
            run.series.append({
                "t": round((k + 1) * args.every, 3), "phase": phase_at(plan, mid),
                "offered": offer.rate(mid), "dead_tuples": dead, "autovacuums": autovacuums,
                "backlog": max(0, sent - workers.count)})
            if not args.quiet:
                lat = run.latencies[k]
                log(f"pressure {plan.scenario} {subject.name} {(k + 1) * args.every:5.0f}s "
                    f"[{run.series[-1]['phase']}]: "
                    f"{run.started[k] / args.every:,.0f} jobs/s so far, "
                    f"p50 {fmt(pct(lat, 50))} p99 {fmt(pct(lat, 99))} ms, {dead:,} dead, "
                    f"backlog {run.series[-1]['backlog']:,}")
        offer.halt.set()
        time.sleep(0.3)  # the workers report every 100 ms
        collect()
        offer.join(10)
        for t in pressers:
            t.join(max(1.0, args.rr_hold + args.hold))
    if errors:
        raise RuntimeError(f"pressure {plan.scenario} {subject.name}: {errors[0]!r}")
    for k, s in enumerate(run.series):
        lat = run.latencies[k]
        s |= {"jobs_per_s": run.started[k] / args.every, "p50_ms": pct(lat, 50),
              "p99_ms": pct(lat, 99)}
    if burst is not None:
        run.pressure_end = (burst.last / 1e9) - t0 if burst.last else p_end
        run.burst = burst_figures(burst, trickle)
    return run


def phase_at(plan: Plan, t: float) -> str:
    return next((name for name, a, b in plan.bounds if a <= t < b), PHASES[-1])


def burst_figures(burst: Burst, trickle: list[tuple[int, float]]) -> dict[str, Any]:
    """The burst's enqueue and drain (its first call -> the start of its last job), and
    the latency of the trickle's jobs committed while it drained (all of them after the
    run's end if it did not drain)."""
    drained = burst.last_start if burst.started >= burst.size else 0
    during = [ms for commit, ms in trickle
              if burst.first <= commit and (not drained or commit <= drained)]
    return {"jobs": burst.size, "enqueue_s": (burst.last - burst.first) / 1e9,
            "drain_s": (drained - burst.first) / 1e9 if drained else None,
            "drained": bool(drained), "trickle_jobs_during_drain": len(during),
            "trickle_p50_ms": pct(during, 50), "trickle_p99_ms": pct(during, 99)}


# ------------------------------------------------------------------ the figures

def phase_figures(run: Run) -> dict[str, dict[str, Any]]:
    """Per phase: jobs started per second, p50/p99 over every job started in it, dead
    tuples (largest, and at its end), largest backlog."""
    out = {}
    for name in PHASES:
        ks = [k for k, s in enumerate(run.series) if s["phase"] == name]
        if not ks:
            continue
        lat = [x for k in ks for x in run.latencies[k]]
        out[name] = {"seconds": len(ks) * run.every,
                     "jobs_per_s": sum(run.started[k] for k in ks) / (len(ks) * run.every),
                     "offered": run.series[ks[0]]["offered"],
                     "p50_ms": pct(lat, 50), "p99_ms": pct(lat, 99),
                     "dead_max": max(run.series[k]["dead_tuples"] for k in ks),
                     "dead_end": run.series[ks[-1]]["dead_tuples"],
                     "backlog_max": max(run.series[k]["backlog"] for k in ks)}
    return out


STEADY = 3  # intervals in a row at baseline that make a recovery


def recovery(series: list[dict[str, Any]], pressure_end: float, every: float,
             phases: dict[str, dict[str, Any]]) -> float | None:
    """Seconds from the end of the pressure to the start of the first STEADY intervals in
    a row at baseline (fewer if the run has fewer left): p99 at most max(2 x clean,
    clean + 5 ms) and the backlog at most max(2 x the clean phase's largest, 100). None
    when no such run of intervals comes before the end. A later lone spike does not
    count: on a shared machine one interval in a minute is often slow."""
    clean = phases.get("clean")
    if not clean or clean["p99_ms"] is None:
        return None
    p99_limit = max(2 * clean["p99_ms"], clean["p99_ms"] + 5)
    backlog_limit = max(2 * clean["backlog_max"], 100)
    after = [s for s in series if s["t"] > pressure_end]
    ok = [(s["p99_ms"] is None or s["p99_ms"] <= p99_limit) and s["backlog"] <= backlog_limit
          for s in after]
    need = min(STEADY, len(after))
    for j in range(len(after) - need + 1):
        if need and all(ok[j:j + need]):
            return max(0.0, float(after[j]["t"] - every - pressure_end))
    return None


def fmt(v: float | None) -> str:
    if v is None:
        return "-"
    a = abs(v)
    return f"{v:,.0f}" if a >= 100 else f"{v:.1f}" if a >= 10 else f"{v:.2f}"


HEADER = ("| scenario | system | offered jobs/s | jobs/s | p50 ms | p99 ms | dead tuples "
          "| backlog, largest | back to baseline |")
LEGEND = ("Each cell: clean / pressure / after; dead tuples: the clean and pressure phases'"
          " largest, the after phase's last; latency: the producer's commit returning ->"
          " the handler's start.")
BURST_HEADER = ("| burst | system | enqueued in | drained in | trickle jobs committed while "
                "it drained | their p50 / p99 ms |")


def three(phases: dict[str, dict[str, Any]], key: str) -> str:
    """A figure of clean / pressure / after."""
    return " / ".join(fmt(phases.get(n, {}).get(key)) for n in PHASES)


def row(r: dict[str, Any]) -> str:
    ph = r["phases"]
    rates = [fmt(ph.get(n, {}).get("offered")) for n in PHASES]
    offered = rates[0] if len(set(rates)) == 1 else " / ".join(rates)
    dead = " / ".join(fmt(ph.get(n, {}).get(k)) for n, k in
                      (("clean", "dead_max"), ("pressure", "dead_max"), ("after", "dead_end")))
    back = "not within the run" if r["recovery_s"] is None else f"{r['recovery_s']:.0f} s"
    cells = [r["scenario"], r["system"], offered, three(ph, "jobs_per_s"), three(ph, "p50_ms"),
             three(ph, "p99_ms"), dead, fmt(ph.get("pressure", {}).get("backlog_max")), back]
    return "| " + " | ".join(cells) + " |"


def burst_row(r: dict[str, Any]) -> str:
    b = r["burst"]
    drain = f"{b['drain_s']:.1f} s" if b["drain_s"] is not None else "not within the run"
    cells = [f"{b['jobs']:,} jobs", r["system"], f"{b['enqueue_s']:.1f} s", drain,
             f"{b['trickle_jobs_during_drain']:,}",
             f"{fmt(b['trickle_p50_ms'])} / {fmt(b['trickle_p99_ms'])}"]
    return "| " + " | ".join(cells) + " |"


def summary(runs: list[dict[str, Any]]) -> str:
    """The summary (markdown): a row per scenario and system, each figure as clean /
    pressure / after (dead tuples: the clean and pressure phases' largest, the after
    phase's last); then the bursts'."""
    lines = [HEADER, "|---" * 9 + "|", *(row(r) for r in runs), "", LEGEND]
    bursts = [r for r in runs if r["burst"]]
    if bursts:
        lines += ["", BURST_HEADER, "|---" * 6 + "|", *(burst_row(r) for r in bursts)]
    return "\n".join(lines)


PANELS = (("jobs_per_s", "jobs started/s", "linear"),
          ("p99_ms", "latency p99 (p50 dotted), ms", "log"),
          ("dead_tuples", "dead tuples in the schema", "linear"),
          ("backlog", "backlog, jobs", "linear"))


def plot(runs: list[dict[str, Any]], stem: Path) -> tuple[list[str], str | None]:
    """A PNG per scenario: four charts over time, every system on each, the pressure
    shaded; ([paths], None) or ([], why not)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return [], "matplotlib is not installed (pip install -r bench/requirements.txt)"
    paths = []
    for scenario in dict.fromkeys(r["scenario"] for r in runs):
        mine = [r for r in runs if r["scenario"] == scenario]
        fig, axes = plt.subplots(len(PANELS), 1, figsize=(9, 10), sharex=True)
        for ax, (key, label, scale) in zip(axes, PANELS):
            for i, r in enumerate(mine):
                color = f"C{i}"
                xs = [s["t"] for s in r["series"]]
                ax.plot(xs, [s[key] if s[key] is not None else float("nan") for s in r["series"]],
                        marker=".", color=color, label=r["system"])
                if key == "p99_ms":
                    ax.plot(xs, [s["p50_ms"] if s["p50_ms"] is not None else float("nan")
                                 for s in r["series"]], linestyle=":", color=color)
            if key == "jobs_per_s" and mine:
                first = mine[0]["series"]
                ax.step([s["t"] for s in first], [s["offered"] for s in first],
                        where="pre", color="grey", linestyle="--", label="offered")
            ax.set_ylabel(label)
            ax.set_yscale(scale)
            if scale == "linear":
                ax.set_ylim(bottom=0)
            p = mine[0]["bounds"][1]
            ax.axvspan(p[1], p[2], alpha=0.12, color="red")
            ax.grid(alpha=0.3)
        axes[0].legend(fontsize="small")
        axes[0].set_title(mine[0]["title"], fontsize="medium")
        axes[-1].set_xlabel("seconds (pressure shaded)")
        fig.tight_layout()
        path = stem.with_name(f"{stem.name}-{scenario}.png")
        fig.savefig(path, dpi=80)
        plt.close(fig)
        paths.append(str(path))
    return paths, None


# ------------------------------------------------------------------ entry point

def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench pressure", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--only", default=",".join(SYSTEM_NAMES),
                   help=f"systems, comma-separated (default: {','.join(SYSTEM_NAMES)})")
    p.add_argument("--scenarios", default=",".join(KINDS),
                   help=f"comma-separated (default: {','.join(KINDS)})")
    p.add_argument("--clean", type=duration, default=60.0, help="the clean phase (60s)")
    p.add_argument("--hold", type=duration, default=180.0,
                   help="idle in transaction, and the overload (3m)")
    p.add_argument("--after", type=duration, default=60.0, help="after the pressure (60s)")
    p.add_argument("--warmup", type=duration, default=5.0,
                   help="load not recorded, before clean (5s)")
    p.add_argument("--every", type=duration, default=5.0, help="the sampling interval (5s)")
    p.add_argument("--rates", default="100,800",
                   help="jobs/s of the idle-in-transaction runs (100,800)")
    p.add_argument("--rr-rate", type=float, default=None, help="jobs/s of rr (the last of --rates)")
    p.add_argument("--rr-hold", type=duration, default=60.0, help="each REPEATABLE READ held (60s)")
    p.add_argument("--rr-every", type=duration, default=15.0, help="one opened every (15s)")
    p.add_argument("--capacity", type=float, default=1000.0,
                   help="the overload's workers: jobs started per second at most (1,000)")
    p.add_argument("--burst", type=int, default=50_000, help="the burst's jobs (50,000)")
    p.add_argument("--trickle", type=float, default=50.0, help="jobs/s around the burst (50)")
    p.add_argument("--burst-window", type=duration, default=60.0,
                   help="the burst's pressure phase (60s)")
    p.add_argument("--pgque-sql", default=None, metavar="PATH",
                   help="PgQue's sql/pgque.sql: a clone of github.com/NikolayS/pgque, its sql/ "
                        "directory, the file or a bare git directory (default "
                        "$BROOQ_BENCH_PGQUE_SQL; without it PgQue is skipped)")
    p.add_argument("--dsn", help="a superuser DSN of a server on this machine to create the "
                   "databases on (default: a throwaway cluster)")
    p.add_argument("--json", type=Path, help="default bench/results/<timestamp>-pressure.json")
    p.add_argument("--quiet", action="store_true", help="no line per interval")
    args = p.parse_args(argv)
    args.only = [s.strip() for s in args.only.split(",") if s.strip()]
    args.scenarios = [s.strip() for s in args.scenarios.split(",") if s.strip()]
    bad = [s for s in args.only if s not in SYSTEM_NAMES]
    if bad := bad + [s for s in args.scenarios if s not in KINDS]:
        p.error(f"unknown systems or scenarios: {bad}")
    try:
        args.rates = [float(r) for r in args.rates.split(",") if r.strip()]
    except ValueError:
        p.error(f"--rates: not numbers: {args.rates!r}")
    if not args.rates:
        p.error("--rates: at least one rate")
    if args.rr_rate is None:
        args.rr_rate = args.rates[-1]
    if why := refused_dsn(args.dsn):
        p.error(why)
    return args


def main(argv: list[str]) -> int:
    args = parse(argv)
    out = output(args.json, "pressure")
    started = time.monotonic()
    runs: list[dict[str, Any]] = []
    with server(args.dsn) as srv:
        settings = srv.settings()
        subs, skipped = subjects(srv, args)
        for name, reason in skipped.items():
            log(f"pressure: skipping {name}: {reason}")
        versions = {s.name: s.system.version() for s in subs if isinstance(s.system, PgQue)}
        for plan in plans(args):
            log(f"pressure: {plan.scenario}: {plan.title}")
            for subject in subs:  # scenario-major: a noisy minute hits every system alike
                run = run_one(subject, plan, args)
                phases = phase_figures(run)
                runs.append({"scenario": run.scenario, "system": run.system, "title": plan.title,
                             "bounds": plan.bounds, "capacity": plan.capacity,
                             "pressure_end_s": run.pressure_end, "phases": phases,
                             "recovery_s": recovery(run.series, run.pressure_end, run.every,
                                                    phases),
                             "burst": run.burst,
                             "series": run.series})
    table = summary(runs)
    out.parent.mkdir(parents=True, exist_ok=True)
    paths, why = plot(runs, out.with_suffix(""))
    md = out.with_suffix(".md")
    md.write_text(f"# Pressure, {out.stem}\n\n{table}\n")
    write(out, {"meta": {"kind": "pressure", "args": public_args(args) | {"json": str(out)},
                         "settings": settings, "seconds": round(time.monotonic() - started, 1),
                         "cores": os.cpu_count(), "load_average_at_end": os.getloadavg(),
                         "skipped": skipped, "versions": versions,
                         "latency": "the producer's commit returned -> handler start"},
                "runs": runs, "summary_md": str(md), "plots": paths, "plots_skipped": why})
    print(f"pressure: clean {args.clean:g} s, hold {args.hold:g} s, after {args.after:g} s, "
          f"a sample every {args.every:g} s")
    print(table)
    for name, reason in skipped.items():
        print(f"  {name} skipped: {reason}")
    print(f"wrote {shown(out)}, {shown(md)}"
          + (f" and {len(paths)} plot{'s' if len(paths) > 1 else ''} beside them" if paths
             else f" (no plots: {why})"))
    return 0
