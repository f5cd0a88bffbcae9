"""Long snapshots: brooq's claims at a fixed rate while a REPEATABLE READ transaction
is held open, against the same load without it (tests/chaos/rr_holder.py's method,
with phases of any length, a time series and a plot).

    python -m bench snapshot                               (or: bash bench/run snapshot)
    python -m bench snapshot --rate 2000 --clean 60s --hold 5m --after 60s

A producer enqueues --rate jobs/s (enqueue_many, --enqueue-batch a call) on a topic
declared notify => false; --consumers connections claim --batch jobs at a time and
settle them done (settle_many) as fast as they can. After --warmup and --clean, a
REPEATABLE READ transaction takes its snapshot and holds it for --hold, then
commits; the run goes on for --after. Per phase: jobs settled per second, claim
latency p50/p99, the ready backlog at its end, and EXPLAIN (ANALYZE, BUFFERS) of the
claim's scan near its end; every --every, the same figures and the job table's dead
tuples and index size. The target: claim p99 during a 5-minute hold at most
2x the clean figure, throughput unchanged. It measures; it changes nothing.
"""

from __future__ import annotations

import argparse
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from bench.longrun import (
    duration,
    installed_brooq,
    log,
    output,
    pct,
    public_args,
    refused_dsn,
    server,
    shown,
    table_stats,
    verdict,
    write,
)

TOPIC = "snap"
SCAN = """explain (analyze, buffers, costs off, timing off)
select j.id from brooq.job j
 where j.state in ('pending', 'failed') and j.topic = 'snap' and j.available_at <= now()
   and j.lease_losses = 0
 order by j.priority desc, j.available_at, j.id limit %s for no key update skip locked"""


@dataclass
class Phase:
    name: str
    start: float
    end: float
    settled: int = 0
    latencies: list[float] = field(default_factory=list)  # ms
    backlog: int = 0
    explain: str = ""

    def summary(self) -> dict[str, Any]:
        return {"phase": self.name, "seconds": round(self.end - self.start, 1),
                "jobs_per_s": self.settled / max(self.end - self.start, 1e-9),
                "claims": len(self.latencies), "claim_p50_ms": pct(self.latencies, 50),
                "claim_p99_ms": pct(self.latencies, 99), "backlog_at_end": self.backlog,
                "explain_at_end": self.explain}


def run(dsn: str, args: argparse.Namespace) -> tuple[list[Phase], list[dict[str, Any]]]:
    import brooq
    with psycopg.connect(dsn, autocommit=True) as conn:
        brooq.declare_topic(conn, TOPIC, notify=False)
    t0 = time.monotonic() + args.warmup
    bounds = [("clean", args.clean), ("during", args.hold), ("after", args.after)]
    phases, at = [], t0
    for name, length in bounds:
        phases.append(Phase(name, at, at + length))
        at += length
    end = at
    lock = threading.Lock()
    stop = threading.Event()
    errors: list[BaseException] = []
    # the time series: per interval, claim latencies and jobs settled
    series_lat: dict[int, list[float]] = {}
    series_done: dict[int, int] = {}

    def slot(t: float) -> int:
        return int((t - t0) // args.every)

    def phase_of(t: float) -> Phase | None:
        return next((p for p in phases if p.start <= t < p.end), None)

    def guard(fn: Any) -> Any:
        def wrapped(*a: Any) -> None:
            try:
                fn(*a)
            except BaseException as e:  # noqa: BLE001 - reported at the end
                errors.append(e)
                stop.set()
        return wrapped

    @guard
    def produce() -> None:
        with psycopg.connect(dsn, autocommit=True) as conn:
            every = args.enqueue_batch / args.rate
            next_at = time.monotonic()
            while not stop.is_set():
                brooq.enqueue_many(conn, TOPIC, [{}] * args.enqueue_batch)
                next_at += every
                time.sleep(max(0.0, next_at - time.monotonic()))

    @guard
    def consume(i: int) -> None:
        with psycopg.connect(dsn, autocommit=True) as conn:
            while not stop.is_set():
                a = time.monotonic()
                rows = conn.execute("select id, lease_token from brooq.claim(%s, array[%s], %s, '30 s')",
                                    [f"c{i}", TOPIC, args.batch], prepare=True).fetchall()
                b = time.monotonic()
                if rows:
                    conn.execute("select count(*) from brooq.settle_many(%s, %s, %s, %s)",
                                 [f"c{i}", [r[0] for r in rows], [r[1] for r in rows],
                                  ["done"] * len(rows)], prepare=True)
                c = time.monotonic()
                with lock:
                    if b >= t0:
                        series_lat.setdefault(slot(b), []).append((b - a) * 1000)
                    if c >= t0:
                        series_done[slot(c)] = series_done.get(slot(c), 0) + len(rows)
                    if (p := phase_of(b)) is not None:
                        p.latencies.append((b - a) * 1000)
                    if (q := phase_of(c)) is not None:
                        q.settled += len(rows)
                if not rows:
                    time.sleep(0.005)

    @guard
    def observe(p: Phase) -> None:
        time.sleep(max(0.0, p.end - time.monotonic() - min(0.5, (p.end - p.start) / 4)))
        with psycopg.connect(dsn, autocommit=True) as conn:
            row = conn.execute("select count(*) from brooq.job where state = 'pending'").fetchone()
            p.backlog = int(row[0]) if row else 0
            with conn.transaction(force_rollback=True):
                p.explain = "\n".join(r[0] for r in conn.execute(SCAN, [args.batch]).fetchall())

    @guard
    def hold() -> None:
        during = phases[1]
        time.sleep(max(0.0, during.start - time.monotonic()))
        with psycopg.connect(dsn) as conn:
            conn.execute("set transaction isolation level repeatable read")
            conn.execute("select count(*) from brooq.topic")  # the snapshot is taken here
            time.sleep(max(0.0, during.end - time.monotonic()))
            conn.commit()

    threads = [threading.Thread(target=produce, daemon=True),
               threading.Thread(target=hold, daemon=True),
               *(threading.Thread(target=consume, args=(i,), daemon=True)
                 for i in range(args.consumers)),
               *(threading.Thread(target=observe, args=(p,), daemon=True) for p in phases)]
    for t in threads:
        t.start()
    # the table's figures per interval, from this thread
    table: dict[int, dict[str, int]] = {}
    with psycopg.connect(dsn, autocommit=True) as conn:
        k = 0
        while time.monotonic() < end and not stop.is_set():
            time.sleep(max(0.0, t0 + (k + 1) * args.every - time.monotonic()))
            table[k] = table_stats(conn, "brooq.job")
            if not args.quiet:
                with lock:
                    lat = list(series_lat.get(k, []))
                    done = series_done.get(k, 0)
                ph = phase_of(t0 + (k + 0.5) * args.every)
                log(f"snapshot {(k + 1) * args.every:6.0f}s [{ph.name if ph else '-'}]: "
                    f"{done / args.every:,.0f} jobs/s, claim p50 {pct(lat, 50) or 0:.2f} ms "
                    f"p99 {pct(lat, 99) or 0:.2f} ms, {table[k]['dead_tuples']:,} dead tuples")
            k += 1
    stop.set()
    for t in threads:
        t.join(timeout=30)
    if errors:
        raise RuntimeError(f"snapshot: a thread failed: {errors[0]!r}")
    series = []
    for k in sorted(table):
        lat = series_lat.get(k, [])
        mid = phase_of(t0 + (k + 0.5) * args.every)
        series.append({"second": (k + 1) * args.every, "phase": mid.name if mid else None,
                       "jobs_per_s": series_done.get(k, 0) / args.every,
                       "claim_p50_ms": pct(lat, 50), "claim_p99_ms": pct(lat, 99),
                       "dead_tuples": table[k]["dead_tuples"],
                       "index_mib": table[k]["index_bytes"] / 2**20})
    return phases, series


def targets(phases: list[Phase]) -> list[dict[str, Any]]:
    clean, during = phases[0].summary(), phases[1].summary()
    out = []
    a, b = clean["claim_p99_ms"], during["claim_p99_ms"]
    out.append({"target": "claim p99 during the hold at most 2× the clean figure",
                "ok": None if a is None or b is None else b <= 2 * a,
                "measured": f"clean {a or 0:.2f} ms, during {b or 0:.2f} ms"
                            + (f" ({b / a:.2f}×)" if a and b else "")})
    ra, rb = clean["jobs_per_s"], during["jobs_per_s"]
    out.append({"target": "throughput during the hold unchanged (at least 95% of clean)",
                "ok": rb >= 0.95 * ra if ra else None,
                "measured": f"clean {ra:,.0f}, during {rb:,.0f} jobs/s"})
    return out


def plot(series: list[dict[str, Any]], phases: list[Phase], stem: Path) -> tuple[list[str], str | None]:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return [], "matplotlib is not installed (pip install -r bench/requirements.txt)"
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    xs = [s["second"] for s in series]
    for key in ("claim_p50_ms", "claim_p99_ms"):
        ax1.plot(xs, [s[key] or 0 for s in series], marker=".", label=key.removeprefix("claim_"))
    ax1.set_ylabel("claim latency, ms")
    ax1.set_ylim(bottom=0)
    ax2.plot(xs, [s["jobs_per_s"] for s in series], marker=".", label="settled")
    ax2.set_ylabel("jobs/s")
    ax2.set_ylim(bottom=0)
    ax2.set_xlabel("seconds")
    t0 = phases[0].start
    for ax in (ax1, ax2):
        ax.axvspan(phases[1].start - t0, phases[1].end - t0, alpha=0.15, color="red",
                   label="REPEATABLE READ held")
        ax.grid(alpha=0.3)
        ax.legend()
    ax1.set_title("brooq claims under a long snapshot")
    fig.tight_layout()
    path = stem.with_name(f"{stem.name}-claims.png")
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return [str(path)], None


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench snapshot", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rate", type=float, default=2000.0, help="jobs enqueued per second (2,000)")
    p.add_argument("--warmup", type=duration, default=5.0, help="not measured (5s)")
    p.add_argument("--clean", type=duration, default=60.0, help="the clean phase (60s)")
    p.add_argument("--hold", type=duration, default=300.0, help="the snapshot held (5m)")
    p.add_argument("--after", type=duration, default=60.0, help="after the commit (60s)")
    p.add_argument("--every", type=duration, default=10.0, help="the time series' interval (10s)")
    p.add_argument("--consumers", type=int, default=2, help="claiming connections (2)")
    p.add_argument("--batch", type=int, default=200, help="jobs per claim (200)")
    p.add_argument("--enqueue-batch", type=int, default=100, help="jobs per enqueue_many (100)")
    p.add_argument("--dsn", help="a superuser DSN of a server on this machine (default: a "
                   "throwaway cluster)")
    p.add_argument("--json", type=Path, help="default bench/results/<timestamp>-snapshot.json")
    p.add_argument("--quiet", action="store_true", help="no line per interval")
    args = p.parse_args(argv)
    if why := refused_dsn(args.dsn):
        p.error(why)
    return args


def main(argv: list[str]) -> int:
    args = parse(argv)
    out = output(args.json, "snapshot")
    t0 = time.monotonic()
    with server(args.dsn) as srv:
        settings = srv.settings()
        dsn = srv.create_db("snapshot")
        installed_brooq(dsn)
        log(f"snapshot: {args.rate:,.0f} jobs/s; clean {args.clean:g}s, REPEATABLE READ held "
            f"{args.hold:g}s, after {args.after:g}s")
        phases, series = run(dsn, args)
    checks = targets(phases)
    paths, why = plot(series, phases, out.with_suffix(""))
    write(out, {"meta": {"kind": "snapshot", "args": public_args(args) | {"json": str(out)},
                         "settings": settings, "seconds": round(time.monotonic() - t0, 1)},
                "phases": [p.summary() for p in phases], "series": series, "targets": checks,
                "plots": paths, "plots_skipped": why})
    print(f"snapshot at {args.rate:,.0f} jobs/s, a REPEATABLE READ transaction held {args.hold:g}s:")
    for p in phases:
        s = p.summary()
        print(f"  {p.name:>6}: {s['jobs_per_s']:7,.0f} jobs/s settled, claim p50 "
              f"{s['claim_p50_ms'] or 0:6.2f} ms p99 {s['claim_p99_ms'] or 0:7.2f} ms, backlog at end "
              f"{s['backlog_at_end']:,}")
    for t in checks:
        print(f"  {verdict(t['ok']):4}  {t['target']}: {t['measured']}")
    print(f"wrote {shown(out)}" + (f" and {len(paths)} plot beside it" if paths else f" (no plots: {why})"))
    return 0
