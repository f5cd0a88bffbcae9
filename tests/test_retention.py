"""Retention: a worker on a topic declared retain_done=False leaves no
done rows and still counts them done; brooq.wait on such a job reads its fate (a
watched job is kept)."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import time
import urllib.request
from datetime import timedelta
from typing import Any

import brooq
import psycopg
from helpers import COMMAND, running, wait_for

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


# --- brooq flush, run as a real subprocess -------------------------------------------

ENV = {k: v for k, v in os.environ.items() if not k.startswith("BROOQ_")}


def seed_flush(conn: Conn) -> None:
    brooq.declare_topic(conn, "fl")
    conn.execute("""insert into brooq.job (topic, payload, state, max_attempts, available_at, created_at,
                                           updated_at, locked_by, locked_until)
                    select 'fl', '{}', s, 5, now(), now(), now(),
                           case when s = 'processing' then 'w' end,
                           case when s = 'processing' then now() + interval '1 minute' end
                      from unnest(array['pending', 'pending', 'failed', 'processing', 'done', 'dead',
                                        'canceled']) as s""")


def states(conn: Conn) -> list[str]:
    return sorted(r[0] for r in conn.execute("select state from brooq.job where topic = 'fl'"))


def test_flush_refuses_without_a_terminal_and_deletes_with_yes(db: str, conn: Conn) -> None:
    seed_flush(conn)
    refused = subprocess.run([*COMMAND, "flush", "fl", "--dsn", db], stdin=subprocess.DEVNULL,
                             capture_output=True, text=True, env=ENV, timeout=60, check=False)
    assert refused.returncode == 1
    assert refused.stderr == ("brooq: error: not flushing 3 queued (pending, failed) jobs of topic fl "
                              "without a confirmation: stdin is not a terminal; pass --yes\n")
    assert len(states(conn)) == 7, "nothing deleted"

    done = subprocess.run([*COMMAND, "flush", "fl", "--yes", "--dsn", db], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, env=ENV, timeout=60, check=False)
    assert (done.returncode, done.stdout) == (0, "flushed 3 queued (pending, failed) jobs of topic fl\n")
    assert states(conn) == ["canceled", "dead", "done", "processing"]

    completed = subprocess.run([*COMMAND, "flush", "fl", "--completed", "--yes", "--dsn", db],
                               stdin=subprocess.DEVNULL, capture_output=True, text=True, env=ENV,
                               timeout=60, check=False)
    assert completed.stdout == "flushed 3 finished (done, dead, canceled) jobs of topic fl\n"
    assert states(conn) == ["processing"], "a processing job is never flushed"

    unknown = subprocess.run([*COMMAND, "flush", "nope", "--yes", "--dsn", db], stdin=subprocess.DEVNULL,
                             capture_output=True, text=True, env=ENV, timeout=60, check=False)
    assert unknown.returncode == 1 and 'topic "nope" does not exist' in unknown.stderr


def flush_on_a_terminal(db: str, answer: bytes) -> tuple[int, str]:
    """Run `brooq flush fl` with a pty as its terminal; answer its question."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([*COMMAND, "flush", "fl", "--dsn", db], stdin=slave, stdout=slave,
                            stderr=slave, env=ENV)
    os.close(slave)
    screen = b""
    try:
        deadline = time.monotonic() + 30
        while b"[y/N]" not in screen and time.monotonic() < deadline:
            if select.select([master], [], [], 0.1)[0]:
                screen += os.read(master, 65536)
        os.write(master, answer + b"\n")
        code = proc.wait(timeout=30)
        try:
            while select.select([master], [], [], 0.2)[0]:
                screen += os.read(master, 65536)
        except OSError:
            pass
    finally:
        os.close(master)
    return code, screen.decode(errors="replace")


def test_flush_asks_on_a_terminal_showing_how_many_jobs(db: str, conn: Conn) -> None:
    seed_flush(conn)
    code, screen = flush_on_a_terminal(db, b"n")
    assert "delete 3 queued (pending, failed) jobs of topic fl? [y/N]" in screen
    assert code == 1 and "nothing flushed" in screen
    assert len(states(conn)) == 7
    code, screen = flush_on_a_terminal(db, b"y")
    assert code == 0 and "flushed 3 queued (pending, failed) jobs of topic fl" in screen
    assert states(conn) == ["canceled", "dead", "done", "processing"]
