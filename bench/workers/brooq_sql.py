"""The bare-SQL brooq worker: one thread, claim a batch, run it, settle_many.

No brooq.Worker machinery (no threads, no heartbeats, no metrics): the reference
for what a minimal Python client gets out of brooq's functions, so the table can
tell the worker's overhead from the SQL's. Wakes on NOTIFY brooq, polls as a
fallback. Usage: python -m bench.workers.brooq_sql '<json config>'
(config: dsn, latency, batch, topic, poll; capacity: handler starts a second at most,
bench/workers/capacity.py, for the pressure bench's overload)
"""

from __future__ import annotations

import json
import os
import sys

import psycopg

from bench.workers.capacity import Capacity
from bench.workers.report import Report

CLAIM = "select id, payload, lease_token from brooq.claim(%s, %s, %s, '30 seconds')"
SETTLE = ("select count(*) from brooq.settle_many(%s, %s, %s, "
          "array_fill('done'::text, array[%s::int]))")


def main() -> None:
    cfg = json.loads(sys.argv[1])
    report = Report(cfg["latency"])
    name = f"bench-sql-{os.getpid()}"
    topics = [cfg.get("topic", "bench")]
    batch = int(cfg.get("batch", 100))
    capacity = Capacity(cfg.get("capacity"))
    woken = False

    def on_notify(_: psycopg.Notify) -> None:
        nonlocal woken
        woken = True

    with psycopg.connect(cfg["dsn"], autocommit=True) as conn:
        conn.add_notify_handler(on_notify)
        conn.execute("listen brooq")
        report.ready()
        while True:
            woken = False
            rows = conn.execute(CLAIM, (name, topics, batch), prepare=True).fetchall()
            if not rows:
                if not woken:
                    for _ in conn.notifies(timeout=float(cfg.get("poll", 1.0)), stop_after=1):
                        pass
                continue
            for _id, payload, _token in rows:
                capacity.admit()
                report.seen(payload)
            conn.execute(SETTLE, (name, [r[0] for r in rows], [r[2] for r in rows], len(rows)),
                         prepare=True)


if __name__ == "__main__":
    main()
