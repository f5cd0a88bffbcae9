"""PgQue's consumer with a no-op handler, and the scheduler PgQue needs beside it.

Usage: python -m bench.workers.pgque_worker '<json config>'
(config: dsn, latency, queue, consumer, capacity: handler starts a second at most
(bench/workers/capacity.py; none: no limit), poll: seconds to wait for a tick's NOTIFY)

The consumer is PgQ's loop on one autocommit connection, each call its own
transaction as PgQue's snapshot rule asks: pgque.next_batch, pgque.get_batch_events,
the handler for every event, pgque.finish_batch. With no batch it waits for the
ticker's NOTIFY pgque_<queue>. One batch at a time: a PgQue consumer is one cursor
(its cooperative subconsumers are experimental in 0.2, and not used here).

The scheduler, a thread on a connection of its own, does what pgque.start() has
pg_cron do where pg_cron is installed: CALL pgque.ticker_loop() back to back (a
tick every tick_period_ms, 100 by default, for a second a call, committing between
ticks), pgque.maint() and pgque.maint_retry_events() every 30 s,
pgque.maint_rotate_tables_step2() every 10 s, each in its own transaction. If it
fails, the process exits (the orchestrator sees a worker die, not a silent queue).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import traceback
from typing import Any

import psycopg

from bench.workers.capacity import Capacity
from bench.workers.report import Report

EVERY = (("select pgque.maint()", 30.0), ("select pgque.maint_retry_events()", 30.0),
         ("select pgque.maint_rotate_tables_step2()", 10.0))


def schedule(dsn: str) -> None:
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            due = {sql: time.monotonic() + every for sql, every in EVERY}
            while True:
                conn.execute("call pgque.ticker_loop()")
                for sql, every in EVERY:
                    if time.monotonic() >= due[sql]:
                        conn.execute(sql)
                        due[sql] = time.monotonic() + every
    except BaseException:  # noqa: BLE001 - the process must not go on without ticks
        traceback.print_exc()
        sys.stderr.flush()
        os._exit(1)


def main() -> None:
    cfg: dict[str, Any] = json.loads(sys.argv[1])
    report = Report(cfg["latency"])
    capacity = Capacity(cfg.get("capacity"))
    queue, consumer = cfg.get("queue", "bench"), cfg.get("consumer", "bench")
    threading.Thread(target=schedule, args=(cfg["dsn"],), daemon=True).start()
    woken = False

    def on_notify(_: psycopg.Notify) -> None:
        nonlocal woken
        woken = True

    with psycopg.connect(cfg["dsn"], autocommit=True) as conn:
        conn.add_notify_handler(on_notify)
        conn.execute(f"listen pgque_{queue}")
        report.ready()
        while True:
            woken = False
            row = conn.execute("select pgque.next_batch(%s, %s)", (queue, consumer),
                               prepare=True).fetchone()
            batch = row[0] if row else None
            if batch is None:
                if woken:  # a tick came while next_batch ran
                    continue
                for _ in conn.notifies(timeout=float(cfg.get("poll", 1.0)), stop_after=1):
                    pass
                continue
            events = conn.execute("select ev_data from pgque.get_batch_events(%s)", (batch,),
                                  prepare=True).fetchall()
            for (data,) in events:
                capacity.admit()
                report.seen(json.loads(data) if data else None)
            conn.execute("select pgque.finish_batch(%s)", (batch,), prepare=True)


if __name__ == "__main__":
    main()
