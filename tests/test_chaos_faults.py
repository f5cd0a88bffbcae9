"""Fault schedules 5 and 9, on their own: a connection that goes silent mid-turn (a
TCP proxy that blackholes it), and a REPEATABLE READ transaction held open while jobs
flow (tests/chaos/rr_holder.py). See docs/reliability.md."""

from __future__ import annotations

import logging
import os
import time
from datetime import timedelta
from typing import Any

import brooq
import psycopg
import pytest
from brooq.listener import RECONNECT_MIN
from chaos.proxy import Proxy
from helpers import fate, running, wait_for

Conn = psycopg.Connection[tuple[Any, ...]]


def through(proxy: Proxy, dsn: str) -> str:
    params = psycopg.conninfo.conninfo_to_dict(dsn)
    params.update(host="127.0.0.1", port=str(proxy.port))
    return psycopg.conninfo.make_conninfo(**params)  # type: ignore[arg-type]


@pytest.mark.slow
def test_a_worker_notices_a_blackholed_connection_within_its_watchdog_bound(
        db: str, conn: Conn, caplog: pytest.LogCaptureFixture) -> None:
    """Fault 5. The loop's connection goes through a proxy that, at some instant, keeps
    it open but forwards nothing (and acknowledges everything, keepalives included: TCP
    alone would never notice). The next statement of the loop gets no answer; the
    watchdog cuts the connection after statement_timeout (lease/2, at least 1 s) + 1 s,
    the loop reconnects (new connections pass), and a job enqueued at the blackhole is
    done within: watchdog limit + its check period + the first reconnect backoff + 1.5 s
    of allowance (claim, run, settle on a loaded machine). Nothing is lost."""
    proxy = Proxy(int(psycopg.conninfo.conninfo_to_dict(db)["port"] or 5432)).start()
    lease = timedelta(seconds=2)
    worker = brooq.Worker(through(proxy, db), name="bh", lease=lease, concurrency=2,
                          poll_interval=timedelta(milliseconds=100))

    @worker.handler("bh", timeout=None)
    def handle(job: brooq.Job) -> dict[str, Any]:
        time.sleep(float(job.payload["s"]))
        return {"ok": True}

    with caplog.at_level(logging.WARNING, logger="brooq.worker"), running(worker):
        before = [brooq.enqueue(conn, "bh", {"s": 0.05}).id for _ in range(5)]
        wait_for(lambda: all(fate(conn, j).state == "done" for j in before), what="the first jobs")
        busy = [brooq.enqueue(conn, "bh", {"s": 0.3}).id for _ in range(4)]
        time.sleep(0.1)  # the loop is claiming and settling them: statements in flight
        assert proxy.blackhole() >= 1
        t0 = time.monotonic()
        probe = brooq.enqueue(conn, "bh", {"s": 0}).id
        limit = worker._watchdog.limit
        bound = limit + worker._watchdog.period + RECONNECT_MIN + 1.5
        wait_for(lambda: fate(conn, probe).state == "done", timeout=bound + 10, what="the probe job")
        noticed = time.monotonic() - t0
        wait_for(lambda: all(fate(conn, j).state == "done" for j in busy), timeout=20,
                 what="the jobs in flight at the blackhole")
    proxy.close()
    cuts = sum("cutting the connection" in r.getMessage() for r in caplog.records)
    print(f"\nblackhole: watchdog limit {limit:.1f}s, probe done {noticed:.2f}s after the blackhole "
          f"(bound {bound:.2f}s), cuts {cuts}")
    assert cuts >= 1  # the watchdog's warning (worker.watchdog_cut)
    assert noticed <= bound


@pytest.mark.long
@pytest.mark.timeout(3600)
def test_a_repeatable_read_holder_and_the_claim_rate(db: str) -> None:
    """Fault 9, short form (3 minutes): jobs flow at 2,000/s; a REPEATABLE READ
    transaction holds its snapshot for 90 s (BROOQ_RR_HOLD seconds: 300 for the full
    schedule); the drain rate and claim latency during and after it, as shares of the
    clean phase. Figures in docs/reliability.md."""
    from chaos.rr_holder import measure

    r = measure(db, clean=30, hold=float(os.environ.get("BROOQ_RR_HOLD", "90")), after=60, rate=2000)
    print("\n" + r.summary())
    assert r.share("during") >= 0.5, r.summary()
    assert r.share("after_60s") >= 0.95, r.summary()
