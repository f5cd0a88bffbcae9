"""Storage prototypes under a pinned MVCC horizon: the hot path (enqueue, claim,
settle) of three storage shapes, each in its own database of one throwaway cluster,
driven the same way one after the other (docs/design/storage.md).

    .venv/bin/python -m bench.storage [--shapes row,ring,split] [--rate 1000]
        [--clean 60s] [--hold 180s] [--after 30s] [--hold-kind rr|xid|dump]

row    today's storage reduced to its hot path (one mutable row per job)
ring   the job's row updated HOT only; claim order in a ring of ready partitions
split  nothing updated: job, ready ring, lease ring, outcome (fate is a view)

Per shape: a producer enqueues --rate jobs/s (batches every 10 ms, the producer's
clock in the payload), --consumers connections claim --batch jobs and settle them as
fast as they can, a rotation call every 250 ms (ring, split). After --warmup and
--clean, a session pins the horizon for --hold, then releases it; the run goes on for
--after. The pin (--hold-kind): rr, a REPEATABLE READ transaction that read one job
row; xid, idle in transaction with an XID; dump, rr that also locks every table of
the shape ACCESS SHARE, as pg_dump does (a ring cannot TRUNCATE under it).
Per phase: jobs settled per second, the claim statement's p50/p99, pickup p50/p99
(enqueue -> claim returned, one clock), and the peak of dead tuples and of the
relations' size; every 5 s the same as a time series (--json to save them).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psycopg

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent / "tests"))
from pgcluster import Cluster

from bench.longrun import duration

SHAPES = ("row", "ring", "split")
TOPIC = "t"


def pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    v = sorted(values)
    return v[min(len(v) - 1, int(len(v) * p / 100))]


# The functions' statements are planned without knowing they touch a batch of rows:
# a hash join would read a whole table to join 50 rows (brooq's own claim keeps its
# plan another way). Every claiming session runs with these, whatever the shape.
JOINS = "set enable_hashjoin = off; set enable_mergejoin = off"


def run_shape(dsn: str, args: argparse.Namespace) -> dict[str, Any]:
    t0 = time.monotonic() + args.warmup
    phases = [("clean", t0, t0 + args.clean), ("held", t0 + args.clean, t0 + args.clean + args.hold),
              ("after", t0 + args.clean + args.hold, t0 + args.clean + args.hold + args.after)]
    end = phases[-1][2]
    stop = threading.Event()
    lock = threading.Lock()
    claims: list[tuple[float, float]] = []  # (at, ms)
    pickups: list[tuple[float, float]] = []  # (at, ms)
    settled: list[tuple[float, int]] = []
    samples: list[dict[str, Any]] = []
    errors: list[BaseException] = []

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
            per = max(1, round(args.rate / 100))
            next_at = time.monotonic()
            while not stop.is_set():
                now = time.time()
                conn.execute("select proto.enqueue(%s, %s::jsonb[])",
                             [TOPIC, [json.dumps({"t": now})] * per], prepare=True)
                next_at += per / args.rate
                time.sleep(max(0.0, next_at - time.monotonic()))

    @guard
    def consume() -> None:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(JOINS)
            while not stop.is_set():
                a = time.monotonic()
                rows = conn.execute("select id, lease_token, payload from proto.claim(%s, %s, '30 s')",
                                    [TOPIC, args.batch], prepare=True).fetchall()
                b = time.monotonic()
                wall = time.time()
                if rows:
                    conn.execute("select proto.settle(%s, %s)", [[r[0] for r in rows], [r[1] for r in rows]],
                                 prepare=True)
                c = time.monotonic()
                with lock:
                    claims.append((b, (b - a) * 1000))
                    pickups.extend((b, (wall - r[2]["t"]) * 1000) for r in rows)
                    settled.append((c, len(rows)))
                if not rows:
                    time.sleep(0.005)

    @guard
    def rotate() -> None:
        with psycopg.connect(dsn, autocommit=True) as conn:
            while not stop.is_set():
                conn.execute("call proto.rotate()")
                time.sleep(0.25)

    @guard
    def hold() -> None:
        with psycopg.connect(dsn) as conn:
            time.sleep(max(0.0, phases[1][1] - time.monotonic()))
            if args.hold_kind in ("rr", "dump"):
                conn.execute("set transaction isolation level repeatable read")
                conn.execute("select id from proto.job limit 1")
            if args.hold_kind == "dump":  # as pg_dump does: every table locked ACCESS SHARE
                for (name,) in conn.execute("select c.oid::regclass::text from pg_class c where"
                                            " c.relnamespace = 'proto'::regnamespace and c.relkind = 'r'").fetchall():
                    conn.execute(f"lock table {name} in access share mode")
            else:
                conn.execute("select txid_current()")
            time.sleep(max(0.0, phases[1][2] - time.monotonic()))
            conn.rollback()

    @guard
    def sample() -> None:
        with psycopg.connect(dsn, autocommit=True) as conn:
            while not stop.is_set():
                dead, size, ready = conn.execute(
                    "select coalesce(sum(pg_stat_get_dead_tuples(c.oid)), 0)::bigint,"
                    " coalesce(sum(pg_total_relation_size(c.oid)) filter (where c.relkind = 'r'), 0)::bigint,"
                    " (select count(*) from proto.job) from pg_class c"
                    " where c.relnamespace = 'proto'::regnamespace and c.relkind in ('r', 'i')").fetchone()
                samples.append({"at": time.monotonic(), "dead": dead, "bytes": size, "jobs": ready})
                stop.wait(5)

    threads = [threading.Thread(target=produce), threading.Thread(target=rotate),
               threading.Thread(target=hold), threading.Thread(target=sample)]
    threads += [threading.Thread(target=consume) for _ in range(args.consumers)]
    for t in threads:
        t.start()
    while time.monotonic() < end and not stop.is_set():
        time.sleep(0.2)
    stop.set()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    out: dict[str, Any] = {"phases": {}}
    for name, a, b in phases:
        c = [ms for at, ms in claims if a <= at < b]
        p = [ms for at, ms in pickups if a <= at < b]
        s = [row for at, row in ((at, n) for at, n in settled) if a <= at < b]
        dead = [x["dead"] for x in samples if a <= x["at"] < b]
        size = [x["bytes"] for x in samples if a <= x["at"] < b]
        out["phases"][name] = {
            "jobs_per_s": round(sum(s) / (b - a)), "claim_p50_ms": round(pct(c, 50), 2),
            "claim_p99_ms": round(pct(c, 99), 2), "pickup_p50_ms": round(pct(p, 50), 1),
            "pickup_p99_ms": round(pct(p, 99), 1), "dead_peak": max(dead, default=0),
            "bytes_peak": max(size, default=0)}
    out["series"] = [{"s": round(x["at"] - t0, 1), "dead": x["dead"], "bytes": x["bytes"],
                      "claim_p99_ms": round(pct([ms for at, ms in claims if x["at"] - 5 <= at < x["at"]], 99), 2)}
                     for x in samples]
    return out


def drain(dsn: str, args: argparse.Namespace) -> dict[str, Any]:
    """--drain jobs enqueued first (1,000 a call), then claimed and settled by
    --consumers connections until none is left: jobs per second from the first claim to
    the last settle, and the dead tuples left."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        for _ in range(args.drain // 1000):
            conn.execute("select proto.enqueue(%s, %s::jsonb[])", [TOPIC, ['{"t": 0}'] * 1000])
        conn.execute("vacuum analyze")
        lsn0 = conn.execute("select pg_current_wal_lsn()").fetchone()
    done = [0] * args.consumers
    seen: list[list[int]] = [[] for _ in range(args.consumers)]

    def consume(i: int) -> None:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(JOINS)
            while True:
                rows = conn.execute("select id, lease_token from proto.claim(%s, %s, '30 s')",
                                    [TOPIC, args.batch], prepare=True).fetchall()
                if not rows:
                    return
                conn.execute("select proto.settle(%s, %s)", [[r[0] for r in rows], [r[1] for r in rows]],
                             prepare=True)
                done[i] += len(rows)
                seen[i].extend(r[0] for r in rows)

    threads = [threading.Thread(target=consume, args=(i,)) for i in range(args.consumers)]
    a = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    b = time.monotonic()
    with psycopg.connect(dsn, autocommit=True) as conn:
        wal = conn.execute("select pg_wal_lsn_diff(pg_current_wal_lsn(), %s)", [lsn0[0] if lsn0 else None]).fetchone()
        fates = dict(conn.execute("select state, count(*) from proto.job_fate group by state").fetchall())
    ids = [i for s in seen for i in s]
    return {"jobs": sum(done), "claimed_twice": len(ids) - len(set(ids)), "fates": fates,
            "seconds": round(b - a, 2), "jobs_per_s": round(sum(done) / (b - a)),
            "wal_bytes_per_job": round(float(wal[0]) / max(sum(done), 1)) if wal else None}


def main() -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.storage", description=__doc__.split("\n\n")[0])
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--rate", type=int, default=1000)
    ap.add_argument("--batch", type=int, default=50)
    ap.add_argument("--consumers", type=int, default=2)
    ap.add_argument("--warmup", type=duration, default=10.0)
    ap.add_argument("--clean", type=duration, default=60.0)
    ap.add_argument("--hold", type=duration, default=180.0)
    ap.add_argument("--after", type=duration, default=30.0)
    ap.add_argument("--hold-kind", choices=("rr", "xid", "dump"), default="rr")
    ap.add_argument("--drain", type=int, default=0,
                    help="instead of the pinned-horizon run: enqueue this many jobs, then drain them")
    ap.add_argument("--dsn", help="a server to use (a database per shape, dropped after) instead of a throwaway cluster")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    shapes = args.shapes.split(",")
    if unknown := [s for s in shapes if s not in SHAPES]:
        ap.error(f"unknown shape {unknown[0]!r}: expected one of {', '.join(SHAPES)}")
    results: dict[str, Any] = {"args": {k: str(v) for k, v in vars(args).items()}}
    with contextlib.ExitStack() as stack:
        server = args.dsn or stack.enter_context(Cluster(durable=True)).dsn
        for shape in shapes:
            name = f"proto_{shape}_{os.getpid()}"
            with psycopg.connect(server, autocommit=True) as conn:
                conn.execute(f"create database {name}")
            try:
                dsn = psycopg.conninfo.make_conninfo(server, dbname=name)
                with psycopg.connect(dsn, autocommit=True) as conn:
                    conn.execute((HERE / f"{shape}.sql").read_text())
                print(f"storage: {shape}: running", file=sys.stderr, flush=True)
                results[shape] = drain(dsn, args) if args.drain else run_shape(dsn, args)
            finally:
                with psycopg.connect(server, autocommit=True) as conn:
                    conn.execute(f"drop database {name} with (force)")
    if args.drain:
        for shape in shapes:
            r = results[shape]
            print(f"{shape:6} drain {r['jobs']} jobs in {r['seconds']} s: {r['jobs_per_s']} jobs/s,"
                  f" {r['wal_bytes_per_job']} WAL bytes a job, {r['claimed_twice']} claimed twice")
        if args.json:
            args.json.write_text(json.dumps(results, indent=1))
        return 0
    print(f"{'shape':6} {'phase':6} {'jobs/s':>7} {'claim p50':>9} {'claim p99':>9} "
          f"{'pickup p50':>10} {'pickup p99':>10} {'dead peak':>10} {'MB peak':>8}")
    for shape in shapes:
        for name, p in results[shape]["phases"].items():
            print(f"{shape:6} {name:6} {p['jobs_per_s']:>7} {p['claim_p50_ms']:>9} {p['claim_p99_ms']:>9} "
                  f"{p['pickup_p50_ms']:>10} {p['pickup_p99_ms']:>10} {p['dead_peak']:>10} "
                  f"{p['bytes_peak'] / 2**20:>8.1f}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
