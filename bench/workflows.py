"""Workflows: pg-boss's published dependency patterns, brooq and pg-boss side by side.

    python -m bench workflows                       (or: bash bench/run workflows)
    python -m bench workflows --jobs 1000 --patterns chain,fanin --runs 3

Each pattern is one workflow of --jobs jobs, enqueued in one call (brooq.enqueue_many
with ``after``, a parent named as an element of the same call; pg-boss's ``flow()``), then
drained by --consumers loops that each claim --batch jobs and settle them done
(brooq.claim and brooq.settle_many; pg-boss's fetch and complete), an empty claim waiting
1 ms. The patterns:

    baseline   no edges
    fanout     one parent, every other job its child
    fanin      one child of every other job
    layered    --layers layers, each job after --parents jobs of the layer before
    chain      every job after the one before

brooq releases a child in the settle that finishes its last parent; pg-boss in a
resolver apart from completion (every flowIntervalSeconds, 1 s at the least), here
called back to back while jobs remain, the fastest it goes. Per pattern: enqueue and
drain rates, claim and settle p50 and p95. Every run checks that each job was settled
and that no child was claimed before its parents' settles were sent.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
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
)
from bench.results import LOWER, Results
from bench.systems import BENCH

PATTERNS = ("baseline", "fanout", "fanin", "layered", "chain")
SYSTEMS = ("brooq", "pg-boss")
TOPIC = "wf"
CLAIM = "select id, lease_token from brooq.claim(%s, array[%s], %s, '30 s')"
SETTLE = "select count(*) from brooq.settle_many(%s, %s, %s, %s)"


def edges(pattern: str, n: int, layers: int = 20, parents: int = 3) -> list[tuple[int, int]]:
    """(child, parent) element indexes from 0 of one workflow of n jobs, parents first."""
    if pattern == "baseline":
        return []
    if pattern == "fanout":
        return [(c, 0) for c in range(1, n)]
    if pattern == "fanin":
        return [(n - 1, p) for p in range(n - 1)]
    if pattern == "chain":
        return [(c, c - 1) for c in range(1, n)]
    if pattern == "layered":
        width = max(1, n // layers)
        out = []
        for c in range(width, n):
            first = (c // width - 1) * width  # the layer before
            out += [(c, first + (c + k) % width) for k in range(min(parents, width))]
        return out
    raise ValueError(f"unknown pattern {pattern!r}: one of {', '.join(PATTERNS)}")


def ran_early(graph: list[tuple[int, int]], claimed_at: list[float],
              settle_sent: list[float]) -> int:
    """Children claimed before a parent's settle was sent (a settle commits after it is
    sent: a child claimed earlier ran before its parent was done). 0 when the order held."""
    return sum(1 for c, p in graph
               if claimed_at[c] and (not settle_sent[p] or claimed_at[c] < settle_sent[p]))


def brooq_run(dsn: str, n: int, graph: list[tuple[int, int]], args: argparse.Namespace) -> dict[str, Any]:
    import brooq
    with psycopg.connect(dsn, autocommit=True) as conn:
        brooq.declare_topic(conn, TOPIC, notify=False)
        a = time.monotonic()
        jobs = brooq.enqueue_many(conn, TOPIC, [{}] * n,
                                  after=[(c + 1, -(p + 1)) for c, p in graph] or None)
        enqueue_s = time.monotonic() - a
    index = {j.id: i for i, j in enumerate(jobs)}
    claimed_at, settle_sent = [0.0] * n, [0.0] * n
    claim_ms: list[float] = []
    settle_ms: list[float] = []
    lock = threading.Lock()
    state = {"settled": 0, "empty": 0}
    errors: list[BaseException] = []
    t0 = time.monotonic()
    deadline = t0 + args.cap

    def more() -> bool:
        return state["settled"] < n and time.monotonic() < deadline

    def consume(k: int) -> None:
        try:
            with psycopg.connect(dsn, autocommit=True) as conn:
                while more():
                    a = time.monotonic()
                    rows = conn.execute(CLAIM, [f"c{k}", TOPIC, args.batch], prepare=True).fetchall()
                    b = time.monotonic()
                    if not rows:
                        with lock:
                            claim_ms.append((b - a) * 1000)
                            state["empty"] += 1
                        time.sleep(0.001)
                        continue
                    for r in rows:
                        claimed_at[index[r[0]]] = b
                    c = time.monotonic()
                    for r in rows:
                        settle_sent[index[r[0]]] = c
                    conn.execute(SETTLE, [f"c{k}", [r[0] for r in rows], [r[1] for r in rows],
                                          ["done"] * len(rows)], prepare=True)
                    d = time.monotonic()
                    with lock:
                        claim_ms.append((b - a) * 1000)
                        settle_ms.append((d - c) * 1000)
                        state["settled"] += len(rows)
        except BaseException as e:  # noqa: BLE001 - reported by the caller
            errors.append(e)

    threads = [threading.Thread(target=consume, args=(k,)) for k in range(args.consumers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise RuntimeError(f"workflows: a brooq consumer failed: {errors[0]!r}")
    return {"enqueue_s": enqueue_s, "drain_s": time.monotonic() - t0, "settled": state["settled"],
            "claim_ms": claim_ms, "settle_ms": settle_ms, "empty_claims": state["empty"],
            "claimed_at": claimed_at, "settle_sent": settle_sent}


def pgboss_run(dsn: str, n: int, graph: list[tuple[int, int]], args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({"n": n, "edges": graph}, f)
    try:
        cfg = {"dsn": dsn, "graph": f.name, "consumers": args.consumers, "batch": args.batch,
               "cap_s": args.cap}
        proc = subprocess.run(["node", str(BENCH / "workers" / "pgboss_workflow.mjs"), json.dumps(cfg)],
                              capture_output=True, text=True, timeout=args.cap + 300, check=False)
    finally:
        os.unlink(f.name)
    if proc.returncode != 0:
        raise RuntimeError(f"workflows: pg-boss exited {proc.returncode}: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def pgboss_missing() -> str | None:
    """Why pg-boss cannot run here (None: it can)."""
    if shutil.which("node") is None:
        return "node is not installed"
    if not (BENCH / "node_modules" / "pg-boss").is_dir():
        return "pg-boss is not in bench/node_modules (bash bench/run installs it with npm)"
    return None


def record(results: Results, pattern: str, system: str, n: int, graph: list[tuple[int, int]],
           out: dict[str, Any]) -> dict[str, Any]:
    """The run's figures into the table; what was checked, for the JSON."""
    early = ran_early(graph, out["claimed_at"], out["settle_sent"])
    finished = out["settled"] >= n
    note = "" if finished else f"not finished: {out['settled']:,} of {n:,} settled"
    if early:
        note = (note + "; " if note else "") + f"{early:,} children claimed before a parent settled"
    results.add(pattern, "enqueue, one call", system, n / out["enqueue_s"], "jobs/s")
    results.add(pattern, "drain", system, out["settled"] / out["drain_s"], "jobs/s",
                note=note)
    for what in ("claim", "settle"):
        for p in (50, 95):
            if (v := pct(out[f"{what}_ms"], p)) is not None:
                results.add(pattern, f"{what} p{p}", system, v, "ms", better=LOWER)
    return {"pattern": pattern, "system": system, "jobs": n, "edges": len(graph),
            "enqueue_s": out["enqueue_s"], "drain_s": out["drain_s"], "settled": out["settled"],
            "claims": len(out["claim_ms"]), "empty_claims": out["empty_claims"],
            "ran_early": early, "finished": finished}


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench workflows", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--jobs", type=int, default=10_000, help="jobs per workflow (10,000)")
    p.add_argument("--patterns", default=",".join(PATTERNS), help=f"of {', '.join(PATTERNS)}")
    p.add_argument("--only", default=",".join(SYSTEMS), help=f"of {', '.join(SYSTEMS)}")
    p.add_argument("--layers", type=int, default=20, help="layered: layers (20)")
    p.add_argument("--parents", type=int, default=3, help="layered: parents per job (3)")
    p.add_argument("--consumers", type=int, default=2, help="claiming loops (2)")
    p.add_argument("--batch", type=int, default=100, help="jobs per claim (100)")
    p.add_argument("--cap", type=float, default=300.0, help="seconds a drain may take (300)")
    p.add_argument("--runs", type=int, default=1, help="runs per pattern and system (1)")
    p.add_argument("--dsn", help="a superuser DSN of a server on this machine (default: a "
                   "throwaway cluster)")
    p.add_argument("--json", type=Path, help="default bench/results/<timestamp>-workflows.json")
    args = p.parse_args(argv)
    args.patterns = [s.strip() for s in args.patterns.split(",") if s.strip()]
    args.only = [s.strip() for s in args.only.split(",") if s.strip()]
    if bad := [s for s in args.patterns if s not in PATTERNS] + [s for s in args.only if s not in SYSTEMS]:
        p.error(f"unknown patterns or systems: {', '.join(bad)}")
    if args.jobs < 2 or args.layers < 1 or args.parents < 1 or args.consumers < 1 or args.batch < 1:
        p.error("--jobs takes at least 2; --layers, --parents, --consumers and --batch at least 1")
    if why := refused_dsn(args.dsn):
        p.error(why)
    return args


def main(argv: list[str]) -> int:
    args = parse(argv)
    out = output(args.json, "workflows")
    results, runs, skipped = Results(), [], {}
    if "pg-boss" in args.only and (why := pgboss_missing()):
        skipped["pg-boss"] = why
        log(f"workflows: pg-boss skipped: {why}")
    systems = [s for s in args.only if s not in skipped]
    t0 = time.monotonic()
    with server(args.dsn) as srv:
        settings = srv.settings()
        for pattern in args.patterns:
            graph = edges(pattern, args.jobs, args.layers, args.parents)
            for k in range(args.runs):
                for system in systems:
                    dsn = srv.create_db(f"wf_{pattern}_{system.replace('-', '')}_{k}")
                    if system == "brooq":
                        installed_brooq(dsn)
                        got = brooq_run(dsn, args.jobs, graph, args)
                    else:
                        got = pgboss_run(dsn, args.jobs, graph, args)
                    runs.append(record(results, pattern, system, args.jobs, graph, got))
                    r = runs[-1]
                    log(f"workflows: {pattern} {system} run {k + 1}: {args.jobs:,} jobs, "
                        f"{len(graph):,} edges, enqueue {r['enqueue_s']:.2f}s, drain "
                        f"{r['drain_s']:.2f}s ({r['settled']:,} settled, {r['ran_early']} early)")
                    srv.drop_all()
    meta = {"kind": "workflows", "args": public_args(args) | {"json": str(out)},
            "settings": settings, "seconds": round(time.monotonic() - t0, 1), "skipped": skipped}
    results.write_json(out, meta)
    data = json.loads(out.read_text())
    out.write_text(json.dumps(data | {"runs": runs}, indent=2, default=str) + "\n")
    print(f"\nworkflows of {args.jobs:,} jobs: median (min–max) of {args.runs} run(s); "
          f"{args.consumers} consumers claiming {args.batch}; * = see notes; "
          "last column > 1 means brooq is better")
    print(results.table(list(SYSTEMS)))
    for f in results.figures.values():
        if f.note:
            print(f"  * {f.system} {f.scenario} {f.metric}: {f.note}")
    for k, v in skipped.items():
        print(f"  * {k} skipped: {v}")
    print(f"wrote {shown(out)} ({meta['seconds']:.0f}s)")
    bad = [r for r in runs if r["ran_early"] or not r["finished"]]
    return 1 if any(r["ran_early"] for r in bad) else 0
