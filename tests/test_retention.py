"""Retention (issue 12): a worker on a topic declared retain_done=False leaves no
done rows and still counts them done; brooq.wait on such a job reads its fate (a
watched job is kept)."""

from __future__ import annotations

import time
import urllib.request
from datetime import timedelta
from typing import Any

import brooq
import psycopg
from worker_app import running, wait_for

Conn = psycopg.Connection[Any]


def test_a_worker_on_a_retain_done_false_topic_leaves_no_done_rows(db: str, conn: Conn) -> None:
    worker = brooq.Worker(db, concurrency=4, poll_interval=timedelta(milliseconds=100))

    @worker.handler("ping", retain_done=False, retain_payload=False, max_attempts=1)
    def ping(job: brooq.Job) -> None:
        if job.payload["n"] % 10 == 0:
            raise ValueError("every tenth fails")

    worker.declare_topics()
    jobs = brooq.enqueue_many(conn, "ping", [{"n": n} for n in range(50)],
                              keys=[f"k{n}" for n in range(50)])
    with running(worker):
        wait_for(lambda: worker.snapshot().topics["ping"].done == 45, what="45 jobs done")
        wait_for(lambda: worker.snapshot().topics["ping"].dead == 5, what="5 jobs dead")
    rows = conn.execute("select state, payload from brooq.job where topic = 'ping'").fetchall()
    assert sorted(r[0] for r in rows) == ["dead"] * 5, "done jobs are deleted, dead ones kept"
    assert all(r[1] is None for r in rows), "the payload of a dead job is cleared (JSON null)"
    assert brooq.get_job(conn, jobs[1].id) is None
    again = brooq.enqueue(conn, "ping", {"n": 1}, key="k1")
    assert again.created, "the key of a deleted job is free again"
    assert not brooq.enqueue(conn, "ping", {"n": 0}, key="k0").created, "a dead job keeps its key"


def test_wait_reads_the_fate_of_a_job_that_retain_done_false_would_delete(db: str, conn: Conn) -> None:
    worker = brooq.Worker(db, concurrency=1, poll_interval=timedelta(milliseconds=100))

    @worker.handler("rpc", retain_done=False)
    def rpc(job: brooq.Job) -> dict[str, int]:
        time.sleep(0.3)
        return {"double": 2 * job.payload["n"]}

    worker.declare_topics()
    job = brooq.enqueue(conn, "rpc", {"n": 21})
    with running(worker):
        fate = brooq.wait(conn, job.id, timeout=20)
    assert fate is not None and (fate.state, fate.result) == ("done", {"double": 42})


def test_purge_all_is_bounded_says_so_and_the_worker_exports_the_counts(db: str, conn: Conn) -> None:
    worker = brooq.Worker(db, metrics_address="127.0.0.1:0", stats_interval=timedelta(milliseconds=200),
                          poll_interval=timedelta(milliseconds=100))

    @worker.handler("old", retention=timedelta(days=1))
    def old(job: brooq.Job) -> None: ...

    worker.declare_topics()
    conn.execute("""insert into brooq.job (topic, payload, state, max_attempts, available_at, created_at, updated_at)
                    select 'old', '{}', 'done', 5, now(), now(), now() - interval '2 days'
                      from generate_series(1, 25)""")
    notices: list[tuple[str | None, ...]] = []
    conn.add_notice_handler(lambda d: notices.append(
        (d.severity_nonlocalized, d.sqlstate, d.message_primary, d.message_hint)))

    conn.execute("call brooq.purge_all(batch_size => 10, max_batches => 2)")
    assert [n[:3] for n in notices] == [
        ("WARNING", "01000", "brooq.purge_all: stopped after 2 batches (20 jobs deleted); "
                             "jobs still due in topics: old")]
    assert "raise max_batches" in str(notices[0][3])
    left = conn.execute("select count(*) from brooq.job where topic = 'old'").fetchone()
    assert left == (5,), "the bound held: 5 jobs wait for the next run"
    assert conn.execute("select deleted, remainders from brooq.retention_stats where topic = 'old'"
                        ).fetchone() == (20, 1)

    notices.clear()
    conn.execute("call brooq.purge_all(batch_size => 10, max_batches => 2)")
    assert notices == [], "nothing left over: no warning"
    assert conn.execute("select deleted, remainders from brooq.retention_stats where topic = 'old'"
                        ).fetchone() == (25, 1)

    with running(worker):
        def scraped() -> str | None:
            text = urllib.request.urlopen(f"{worker.metrics_url}/metrics").read().decode()
            return text if 'brooq_retention_deleted_total{topic="old"} 25.0' in text else None
        text = wait_for(scraped, what="the retention counters in /metrics")
    assert 'brooq_retention_remainder_total{topic="old"} 1.0' in text
