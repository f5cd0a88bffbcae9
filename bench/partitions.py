"""Enqueue and drain through 1, 2 and 4 partitions behind the PL/Proxy router.

    .venv/bin/python -m bench.partitions [--jobs 20000] [--single 2000] [--partitions 1,2,4]

For each partition count: fresh brooq databases (clones of one deployed by sqitch)
and a router deployed from proxy/, all in one durable throwaway cluster on this host
(tests/pgcluster.py). Measured (docs/scale-out.md):

  bulk enqueue    --jobs jobs in brooq.enqueue_many batches of 1,000 through the router
                  (one client), and the same straight into one partition (no router)
  single enqueue  --single brooq.enqueue calls through the router, no key, from 4 client
                  threads, one call per transaction
  drain           --jobs ready jobs drained by one `brooq worker --partition ...`
                  process (no-op handler, --concurrency 4 per partition), from its first
                  settled job to its last

Every partition here shares the same 2 cores and disk: the figures show the router's
cost and the worker's shape, not the gain of N hosts.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from pgcluster import Cluster  # noqa: E402


def sqitch_deploy(dsn_target: str, cwd: Path) -> None:
    done = subprocess.run(["sqitch", "deploy", dsn_target], cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"sqitch deploy failed:\n{done.stdout}\n{done.stderr}")


def execute(dsn: str, query: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(query)


def build(c: Cluster, n: int) -> tuple[str, list[str]]:
    tag = uuid.uuid4().hex[:6]
    parts = []
    for p in range(n):
        name = f"part{p}_{tag}"
        execute(c.dsn, f"create database {name} template bench_template")
        parts.append(name)
    execute(c.dsn, f"create database router_{tag}")
    router = c.dsn_for(f"router_{tag}")
    sqitch_deploy(f"db:pg://postgres@127.0.0.1:{c.port}/router_{tag}", ROOT / "proxy")
    with psycopg.connect(router, autocommit=True) as conn:
        for name in parts:
            conn.execute("select brooq_proxy.add_partition(%s)",
                         (f"host=127.0.0.1 port={c.port} dbname={name}",))
        conn.execute("select brooq.declare_topic('echo')")
    return router, [c.dsn_for(name) for name in parts]


def bulk(dsn: str, jobs: int, batch: int = 1000) -> float:
    with psycopg.connect(dsn, autocommit=True) as conn:
        payloads = ['{"n": 1}'] * batch
        start = time.perf_counter()
        for _ in range(jobs // batch):
            conn.execute("select count(*) from brooq.enqueue_many('echo', %s::jsonb[])", (payloads,))
        return (jobs // batch) * batch / (time.perf_counter() - start)


def single(dsn: str, jobs: int, threads: int = 4) -> float:
    def run(k: int) -> None:
        with psycopg.connect(dsn, autocommit=True) as conn:
            for _ in range(k):
                conn.execute("select id from brooq.enqueue('echo', '{}')")

    each = jobs // threads
    ts = [threading.Thread(target=run, args=(each,)) for _ in range(threads)]
    start = time.perf_counter()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return each * threads / (time.perf_counter() - start)


def done_count(parts: list[str]) -> int:
    total = 0
    for dsn in parts:
        with psycopg.connect(dsn) as conn:
            row = conn.execute("select count(*) from brooq.job where state = 'done'").fetchone()
            total += int(row[0]) if row else 0
    return total


def ready_count(router: str) -> int:
    with psycopg.connect(router) as conn:
        row = conn.execute("select coalesce(sum(ready), 0) from brooq.topic_stats").fetchone()
        return int(row[0]) if row else 0


def drain(router: str, parts: list[str], concurrency: int, timeout: float = 300.0) -> float:
    total = ready_count(router)
    already = done_count(parts)
    proc = subprocess.Popen(
        [sys.executable, "-m", "brooq.tools", "worker", "worker_app:from_env",
         *[a for dsn in parts for a in ("--partition", dsn)],
         "--concurrency", str(concurrency), "--progress", "off", "--log-level", "WARNING"],
        cwd=ROOT / "tests", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        first = None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            done = done_count(parts) - already
            now = time.perf_counter()
            if first is None and done > 0:
                first, first_done = now, done
            if done >= total:
                assert first is not None
                return (done - first_done) / max(now - first, 1e-6)
            time.sleep(0.05)
        raise SystemExit(f"drain of {total} jobs timed out")
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, default=20_000)
    ap.add_argument("--single", type=int, default=2_000)
    ap.add_argument("--partitions", default="1,2,4")
    ap.add_argument("--concurrency", type=int, default=4, help="handler slots per partition (default 4)")
    args = ap.parse_args()
    counts = [int(x) for x in args.partitions.split(",")]
    rows = []
    with Cluster() as c:  # durable: fsync and synchronous_commit on
        execute(c.dsn, "create database bench_template")
        sqitch_deploy(f"db:pg://postgres@127.0.0.1:{c.port}/bench_template", ROOT)
        execute(c.dsn_for("bench_template"), "select brooq.declare_topic('echo')")
        for n in counts:
            router, parts = build(c, n)
            direct = bulk(parts[0], args.jobs)  # straight into one partition, no router
            execute(parts[0], "delete from brooq.job")
            via = bulk(router, args.jobs)
            one = single(router, args.single)
            rate = drain(router, parts, args.concurrency)
            rows.append((n, direct, via, one, rate))
            print(f"{n} partition(s): bulk enqueue direct {direct:,.0f}/s, via router {via:,.0f}/s; "
                  f"single enqueue via router {one:,.0f}/s; drain {rate:,.0f}/s", flush=True)
    print()
    print("| partitions | bulk enqueue, one partition directly | bulk enqueue via router "
          "| single enqueue via router (4 clients) | drain (one worker process) |")
    print("|---:|---:|---:|---:|---:|")
    for n, direct, via, one, rate in rows:
        print(f"| {n} | {direct:,.0f} jobs/s | {via:,.0f} jobs/s | {one:,.0f} jobs/s | {rate:,.0f} jobs/s |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
