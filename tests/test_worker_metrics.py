"""The metrics endpoint: every metric, with the values of the run that just happened."""

from __future__ import annotations

import asyncio
import threading
import time
import urllib.error
import urllib.request
from datetime import timedelta
from typing import Any

import brooq
import psycopg
from prometheus_client.parser import text_string_to_metric_families
from psycopg import sql
from helpers import running, wait_for

Conn = psycopg.Connection[tuple[Any, ...]]


def scrape(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    with urllib.request.urlopen(f"{url}/metrics", timeout=5) as response:
        text = response.read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_metrics_and_healthz_after_a_run(db: str, conn: Conn) -> None:
    worker = brooq.Worker(db, concurrency=4, lease=timedelta(seconds=1),
                          poll_interval=timedelta(milliseconds=100),
                          stats_interval=timedelta(milliseconds=200), metrics_address="127.0.0.1:0")

    @worker.handler("m", max_attempts=1, backoff_base=timedelta(minutes=1))
    def handle(job: brooq.Job) -> str:
        kind = job.payload["kind"]
        if kind == "fail":
            raise RuntimeError("no")
        if kind == "retry":
            raise brooq.Retry(timedelta(minutes=1))
        if kind == "cancel":
            raise brooq.Cancel()
        if kind == "slow":
            time.sleep(0.2)
        return "ok"

    @worker.handler("other")
    def other(job: brooq.Job) -> None:
        raise brooq.PreserveAttempt(timedelta(minutes=1))

    assert worker.health() is not None  # not running yet
    # a job held by a worker that died: its lease expires and our worker reaps it
    brooq.declare_topic(conn, "m")
    brooq.enqueue(conn, "m", {"kind": "ok"})
    conn.execute("select brooq.claim('ghost', array['m'], 1, interval '100 ms')")
    with running(worker):
        url = worker.metrics_url
        assert url is not None
        wait_for(lambda: worker.snapshot().done == 1, what="the reaped job to be done")
        kinds = ["ok", "ok", "slow", "fail", "retry", "cancel"]
        brooq.enqueue_many(conn, "m", [{"kind": k} for k in kinds])
        brooq.enqueue(conn, "other", {})
        brooq.enqueue(conn, "m", {"kind": "later"}, delay=timedelta(hours=1))
        wait_for(lambda: worker.snapshot().claimed == 8, what="8 claims")
        wait_for(lambda: worker.snapshot().in_flight == 0)
        time.sleep(0.5)  # one more stats refresh
        m = scrape(url)
        health = get(f"{url}/healthz")
        missing = get(f"{url}/nope")

    def v(name: str, **labels: str) -> float:
        return m[(name, tuple(sorted(labels.items())))]

    assert v("brooq_jobs_claimed_total", topic="m") == 7
    assert v("brooq_jobs_claimed_total", topic="other") == 1
    assert v("brooq_jobs_settled_total", topic="m", outcome="done") == 4
    assert v("brooq_jobs_settled_total", topic="m", outcome="dead") == 2  # fail, and retry on the last attempt
    assert v("brooq_jobs_settled_total", topic="m", outcome="cancel") == 1
    assert v("brooq_jobs_settled_total", topic="m", outcome="failed") == 0
    assert v("brooq_jobs_settled_total", topic="other", outcome="preserve") == 1
    assert v("brooq_attempt_duration_seconds_count", topic="m") == 7
    assert v("brooq_attempt_duration_seconds_sum", topic="m") >= 0.2
    assert v("brooq_attempt_duration_seconds_bucket", topic="m", le="0.1") == 6
    assert v("brooq_busy_slots") == 0
    assert v("brooq_slots") == 4
    assert v("brooq_jobs", topic="m", state="pending") == 1  # the delayed one
    assert v("brooq_jobs", topic="other", state="failed") == 1  # preserved, waiting
    assert v("brooq_jobs", topic="m", state="processing") == 0
    assert v("brooq_oldest_ready_age_seconds", topic="m") == 0  # nothing ready
    assert v("brooq_jobs_reaped_total") == 1
    assert v("brooq_lease_lost_total", topic="m") == 0
    assert v("brooq_hung_handlers_total", topic="m") == 0
    assert health == (200, "ok\n")
    assert missing[0] == 404


def test_healthz_is_503_without_a_database(conn: Conn, db: str, server: Any) -> None:
    worker = brooq.Worker(db, lease=timedelta(seconds=1), metrics_address="127.0.0.1:0",
                          poll_interval=timedelta(milliseconds=100))

    @worker.handler("h")
    def handle(job: brooq.Job) -> None:
        return None

    name = sql.Identifier(conn.info.dbname)
    with running(worker):
        url = worker.metrics_url
        assert get(f"{url}/healthz")[0] == 200
        server.execute(sql.SQL("alter database {} with allow_connections false").format(name))
        try:
            server.execute("select pg_terminate_backend(pid) from pg_stat_activity"
                           " where application_name like 'brooq worker%'")
            _, text = wait_for(lambda: (r := get(f"{url}/healthz"))[0] == 503 and r, timeout=5)
            assert "no database connection" in text
        finally:
            server.execute(sql.SQL("alter database {} with allow_connections true").format(name))
        wait_for(lambda: get(f"{url}/healthz")[0] == 200, timeout=10, what="healthy again")


def test_busy_slots_by_topic(db: str, conn: Conn) -> None:
    """brooq_topic_busy_slots{topic}: the handlers of each topic running now, sync and
    async; brooq_busy_slots is their sum (one source: the worker's Counters)."""
    worker = brooq.Worker(db, concurrency=5, lease=timedelta(seconds=2),
                          poll_interval=timedelta(milliseconds=100), metrics_address="127.0.0.1:0")
    release = threading.Event()

    @worker.handler("slow")
    def slow(job: brooq.Job) -> None:
        release.wait(20)

    @worker.handler("slow-async")
    async def slow_async(job: brooq.Job) -> None:
        await asyncio.get_running_loop().run_in_executor(None, release.wait, 20)

    @worker.handler("idle")
    def idle(job: brooq.Job) -> None:
        return None

    worker.declare_topics()
    brooq.enqueue_many(conn, "slow", [{}] * 3)
    brooq.enqueue(conn, "slow-async", {})

    def busy(m: dict[Any, float]) -> dict[str, float]:
        return {dict(labels)["topic"]: value for (name, labels), value in m.items()
                if name == "brooq_topic_busy_slots"}

    with running(worker):
        url = worker.metrics_url
        assert url is not None
        def scraped_when(ok: Any) -> Any:
            return lambda: (s if ok(s := scrape(url)) else None)

        m = wait_for(scraped_when(lambda s: busy(s) == {"slow": 3, "slow-async": 1, "idle": 0}),
                     what="4 busy slots")
        assert m[("brooq_busy_slots", ())] == 4
        release.set()
        wait_for(lambda: worker.snapshot().done == 4, what="the jobs to be done")
        m = wait_for(scraped_when(lambda s: s[("brooq_busy_slots", ())] == 0), what="no busy slot")
        assert busy(m) == {"slow": 0, "slow-async": 0, "idle": 0}


def test_a_worker_nobody_scrapes_never_imports_prometheus(db: str) -> None:
    """prometheus-client is imported when worker.metrics is first read (or served), not
    for a worker that only counts: the counts live in brooq.counters either way."""
    import textwrap

    from helpers import run_fresh

    code = textwrap.dedent(f"""
        import sys, brooq
        worker = brooq.Worker({db!r}, concurrency=2)
        worker.handler("t")(lambda job: None)
        print("prometheus_client" in sys.modules)
        worker._counts.topics["t"].observe(0.003)
        registry = worker.metrics.registry
        print("prometheus_client" in sys.modules)
        for name, labels in (("brooq_attempt_duration_seconds_bucket", {{"topic": "t", "le": "0.005"}}),
                             ("brooq_attempt_duration_seconds_bucket", {{"topic": "t", "le": "0.001"}}),
                             ("brooq_slots", {{}})):
            print(float(registry.get_sample_value(name, labels)))
    """)
    assert run_fresh(code).split() == ["False", "True", "1.0", "0.0", "2.0"]
