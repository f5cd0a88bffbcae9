"""How long the dashboard's pages take on a big table (docs/dashboard.md, "Measured"):

    .venv/bin/python bench/dashboard.py

A throwaway cluster (tests/pgcluster.py) with sql/install.sql; one topic with 1 million
finished jobs over the last 2 hours (0.1% dead), one with 50,000 over 15 minutes, one
with 10,000 ready. Prints the plan of the throughput query and the median of 5 reads
of each page's queries (brooq.tools.dashboard.Database: what a page runs, without HTTP).
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import psycopg
from brooq.tools import queries as tool_queries
from brooq.tools.dashboard import Database
from pgcluster import Cluster


def main() -> None:
    with Cluster(durable=False) as cluster:
        dsn = cluster.dsn
        subprocess.run(["psql", "-X", "-q", "-d", dsn, "-f", str(ROOT / "sql" / "install.sql")],
                       check=True, capture_output=True)
        with psycopg.connect(dsn, autocommit=True) as conn:
            for topic in ("big", "small", "other"):
                conn.execute("select brooq.declare_topic(%s)", [topic])
            # the table is private: a superuser's shortcut to a big history
            conn.execute("""
                insert into brooq.job (topic, payload, state, attempts, max_attempts, available_at,
                                       created_at, updated_at, last_error)
                select 'big', jsonb_build_object('i', i), case when i % 1000 = 0 then 'dead' else 'done' end,
                       1, 5, now() - interval '2 hours', now() - interval '2 hours',
                       now() - (i % 7200) * interval '1 second', case when i % 1000 = 0 then 'boom' end
                  from generate_series(1, 1000000) as i""")
            conn.execute("""
                insert into brooq.job (topic, payload, state, attempts, max_attempts, available_at,
                                       created_at, updated_at)
                select 'small', '{}', 'done', 1, 5, now(), now(), now() - (i % 900) * interval '1 second'
                  from generate_series(1, 50000) as i""")
            conn.execute("""
                insert into brooq.job (topic, payload, state, attempts, max_attempts, available_at,
                                       created_at, updated_at)
                select 'other', '{}', 'pending', 0, 5, now(), now(), now() from generate_series(1, 10000)""")
            conn.execute("vacuum analyze brooq.job")
            since = conn.execute("select date_trunc('minute', now()) - interval '14 minutes'").fetchone()
            assert since is not None
            plan = conn.execute("explain (analyze, buffers) " + tool_queries.DASHBOARD_THROUGHPUT,  # type: ignore[operator]
                                {"topics": ["big", "small", "other"], "sinces": [since[0]] * 3}).fetchall()
            print("\n".join(r[0] for r in plan))
        db = Database(dsn)
        pages: dict[str, Callable[[], Any]] = {
            "topics (the first time)": db.overview,
            "topics (complete minutes kept)": db.overview,
            "in flight": db.in_flight,
            "dead and failed": lambda: db.jobs(None, ["dead", "failed"]),
            "dead of one topic": lambda: db.jobs("big", ["dead"]),
            "a job": lambda: db.job(500000),
        }
        for name, read in pages.items():
            if name.startswith("topics (the first"):
                t0 = time.perf_counter()
                read()
                print(f"{name}: {(time.perf_counter() - t0) * 1000:.1f} ms")
                time.sleep(1)
                continue
            times = []
            for _ in range(5):
                t0 = time.perf_counter()
                read()
                times.append(time.perf_counter() - t0)
            print(f"{name}: median {sorted(times)[2] * 1000:.1f} ms")


if __name__ == "__main__":
    main()
