"""Deep tables: brooq with a long history and a large backlog against the same backlog
on an empty table.

    python -m bench deep                                  (or: bash bench/run deep)
    python -m bench deep --history 1000000 --ready 100000 --topics 20

Two databases on one server. Both get the same backlog of --ready jobs spread over
--topics topics (brooq.enqueue_many, 5,000 a call, topic after topic); the deep one
first gets --history terminal rows (done, 0.1% dead, finished over the last day)
written straight into brooq.job by the owner (INSERT ... SELECT generate_series,
a million a statement). Both are vacuumed and analyzed. Then, on each: --claims
claims of one job (a topic after another, each settled done): p50 and p99;
`brooq.topic_stats`, `brooq.health()` and the dashboard's pages (what each page
reads, brooq.tools.dashboard.Database, without HTTP): median of 5; and the drain of
one brooq.Worker process handling every topic for --drain-seconds. The
targets: claim and drain within 10% of the empty table's, each read under 100 ms.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg

from bench.longrun import (
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
from bench.procs import Workers
from bench.progress import Progress
from bench.systems import Brooq, python_worker

CHUNK = 1_000_000  # history rows per INSERT statement
BATCH = 5_000  # ready jobs per enqueue_many


def topics(k: int) -> list[str]:
    return [f"deep-{i:03d}" for i in range(k)]


def load(dsn: str, args: argparse.Namespace, history: int) -> dict[str, float]:
    """brooq, the topics, ``history`` terminal rows, the backlog; vacuum analyze. Seconds each."""
    import brooq
    names = topics(args.topics)
    spent: dict[str, float] = {}
    installed_brooq(dsn)
    with psycopg.connect(dsn, autocommit=True) as conn:
        for t in names:
            brooq.declare_topic(conn, t)
        t0 = time.monotonic()
        for start in range(0, history, CHUNK):
            stop = min(start + CHUNK, history)
            conn.execute(
                "insert into brooq.job (topic, payload, state, attempts, max_attempts, available_at,"
                " created_at, updated_at, last_error)"
                " select (%(topics)s::text[])[1 + g %% %(k)s::int], jsonb_build_object('seq', g),"
                "        case when g %% 1000 = 0 then 'dead' else 'done' end, 1, 5,"
                "        now() - interval '1 day', now() - interval '1 day',"
                "        now() - (g %% 86400) * interval '1 second',"
                "        case when g %% 1000 = 0 then 'boom' end"
                "   from generate_series(%(a)s::bigint, %(b)s::bigint) g",
                {"topics": names, "k": len(names), "a": start + 1, "b": stop})
            log(f"deep: {stop:,}/{history:,} terminal rows ({time.monotonic() - t0:.0f}s)")
        spent["history_s"] = time.monotonic() - t0
        t0 = time.monotonic()
        progress = Progress("deep: backlog", args.quiet)
        for n, start in enumerate(range(0, args.ready, BATCH)):
            seqs = range(start, min(start + BATCH, args.ready))
            brooq.enqueue_many(conn, names[n % len(names)], [{"seq": i} for i in seqs])
            progress.update(f"{seqs[-1] + 1:,}/{args.ready:,} ready", seqs[-1] + 1, t0)
        spent["ready_s"] = time.monotonic() - t0
        t0 = time.monotonic()
        conn.execute("vacuum analyze brooq.job")
        spent["vacuum_analyze_s"] = time.monotonic() - t0
    return spent


def timed(fn: Callable[[], Any], n: int = 5) -> float:
    """The median of n calls, ms."""
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def measure(dsn: str, args: argparse.Namespace) -> dict[str, Any]:
    from brooq.tools.dashboard import Database
    from brooq.tools.dashboard_browse import Filters
    names = topics(args.topics)
    out: dict[str, Any] = {}
    with psycopg.connect(dsn, autocommit=True) as conn:
        out |= table_stats(conn, "brooq.job")
        lat = []
        for i in range(args.claims):
            t0 = time.perf_counter()
            row = conn.execute("select id, lease_token from brooq.claim('deep-probe', %s, 1, '30s')",
                               ([names[i % len(names)]],), prepare=True).fetchone()
            lat.append((time.perf_counter() - t0) * 1000)
            if row:
                conn.execute("select brooq.settle(%s, 'deep-probe', %s, 'done')", (row[0], row[1]),
                             prepare=True)
        out["claim_p50_ms"], out["claim_p99_ms"] = pct(lat, 50), pct(lat, 99)
        out["topic_stats_ms"] = timed(lambda: conn.execute("select * from brooq.topic_stats").fetchall())
        out["health_ms"] = timed(lambda: conn.execute("select * from brooq.health()").fetchall())
        row = conn.execute("select min(id) from brooq.job").fetchone()
        some_id = int(row[0]) if row and row[0] else 1
    db = Database(dsn)
    pages: dict[str, Callable[[], Any]] = {
        "topics": db.overview,
        "in flight": db.in_flight,
        "dead and failed": lambda: db.browse(Filters(), None),
        "dead of one topic": lambda: db.browse(Filters(topic=names[0], state="dead"), None),
        "done, every topic": lambda: db.browse(Filters(state="done"), None),
        "pending, every topic": lambda: db.browse(Filters(state="pending"), None),
        "a payload field over done": lambda: db.browse(Filters.of({"state": "done", "payload": "n = 1"}), None),
        "find by key": lambda: db.find("no-such-key"),
        "a job": lambda: db.job(some_id),
    }
    t0 = time.perf_counter()
    db.overview()
    out["page: topics, the first read (ms)"] = (time.perf_counter() - t0) * 1000
    for name, read in pages.items():
        out[f"page: {name} (ms)"] = timed(read)
    out["drain_jobs_per_s"] = drain(dsn, args)
    return out


def drain(dsn: str, args: argparse.Namespace) -> float:
    """One brooq.Worker process with a handler per topic (the bench's settings) for
    --drain-seconds, or until the backlog is gone: jobs started per second."""
    names = topics(args.topics)
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute("select count(*) from brooq.job where state = 'pending'").fetchone()
        left = int(row[0]) if row else 0
    cmd = python_worker("brooq_worker", {"dsn": dsn, "latency": False, "topics": names,
                                         "concurrency": Brooq.concurrency, "prefetch": Brooq.prefetch})
    progress = Progress("deep: drain", args.quiet)
    with Workers(cmd, 1) as workers:
        workers.wait_ready()
        workers.wait_count(left, args.drain_seconds, progress)
        count, first, last = workers.span()
    return count / ((last - first) / 1e9) if last > first else 0.0


FIGURES = ["claim_p50_ms", "claim_p99_ms", "drain_jobs_per_s", "topic_stats_ms", "health_ms"]


def targets(empty: dict[str, Any], deep: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for key, better in (("claim_p50_ms", "lower"), ("claim_p99_ms", "lower"),
                        ("drain_jobs_per_s", "higher")):
        a, b = empty[key], deep[key]
        ok = (b <= 1.1 * a) if better == "lower" else (b >= 0.9 * a)
        out.append({"target": f"{key} within 10% of the empty table's", "ok": ok,
                    "measured": f"empty {a:,.2f}, deep {b:,.2f} ({b / a if a else float('inf'):.2f}×)"})
    for key in [k for k in deep if k.endswith("_ms") and not k.startswith("claim")] + \
            [k for k in deep if k.startswith("page:")]:
        out.append({"target": f"{key.removesuffix(' (ms)')} under 100 ms on the deep table",
                    "ok": deep[key] < 100, "measured": f"{deep[key]:.1f} ms (empty {empty[key]:.1f})"})
    return out


def num(v: float) -> str:
    return f"{v:,}" if isinstance(v, int) else f"{v:,.2f}"


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench deep", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--history", type=int, default=10_000_000, help="terminal rows (10,000,000)")
    p.add_argument("--ready", type=int, default=1_000_000, help="ready jobs (1,000,000)")
    p.add_argument("--topics", type=int, default=100, help="topics the backlog spreads over (100)")
    p.add_argument("--claims", type=int, default=1000, help="claims of one job timed (1,000)")
    p.add_argument("--drain-seconds", type=float, default=20.0,
                   help="how long the drain runs at most (20)")
    p.add_argument("--dsn", help="a superuser DSN of a server on this machine (default: a "
                   "throwaway cluster)")
    p.add_argument("--json", type=Path, help="default bench/results/<timestamp>-deep.json")
    p.add_argument("--quiet", action="store_true", help="no live progress")
    args = p.parse_args(argv)
    if why := refused_dsn(args.dsn):
        p.error(why)
    return args


def main(argv: list[str]) -> int:
    args = parse(argv)
    out = output(args.json, "deep")
    t0 = time.monotonic()
    with server(args.dsn) as srv:
        settings = srv.settings()
        empty_dsn, deep_dsn = srv.create_db("deep_empty"), srv.create_db("deep_full")
        loads = {"deep": load(deep_dsn, args, args.history), "empty": load(empty_dsn, args, 0)}
        log(f"deep: loaded ({', '.join(f'{k} {v:.0f}s' for k, v in loads['deep'].items())})")
        results = {}
        for case, dsn in (("empty", empty_dsn), ("deep", deep_dsn)):
            results[case] = measure(dsn, args)
            log(f"deep: {case}: claim p50 {results[case]['claim_p50_ms']:.2f} ms, p99 "
                f"{results[case]['claim_p99_ms']:.2f} ms, drain {results[case]['drain_jobs_per_s']:,.0f}"
                f" jobs/s, topic_stats {results[case]['topic_stats_ms']:.1f} ms")
    checks = targets(results["empty"], results["deep"])
    write(out, {"meta": {"kind": "deep", "args": public_args(args) | {"json": str(out)},
                         "settings": settings, "seconds": round(time.monotonic() - t0, 1),
                         "load_seconds": loads},
                "figures": FIGURES, "empty": results["empty"], "deep": results["deep"],
                "targets": checks})
    print(f"deep: {args.history:,} terminal rows, {args.ready:,} ready over {args.topics} topics,"
          f" against the same backlog on an empty table:")
    width = max(len(k) for k in results["deep"])
    print(f"  {'figure':{width}}  {'empty':>12}  {'deep':>12}")
    for k in results["deep"]:
        a, b = results["empty"][k], results["deep"][k]
        print(f"  {k:{width}}  {num(a):>12}  {num(b):>12}")
    for t in checks:
        print(f"  {verdict(t['ok']):4}  {t['target']}: {t['measured']}")
    print(f"wrote {shown(out)}")
    return 0
