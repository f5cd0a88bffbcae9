"""Real worker processes: kill -9, SIGTERM, PostgreSQL restarts."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import brooq
import psycopg
import pytest
from helpers import fate, running, wait_for

APP = Path(__file__).with_name("worker_app.py")
Conn = psycopg.Connection[tuple[Any, ...]]

pytestmark = pytest.mark.slow


class Processes:
    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self.started: list[subprocess.Popen[str]] = []

    def start(self, name: str, *args: str) -> subprocess.Popen[str]:
        proc = subprocess.Popen([sys.executable, str(APP), self.dsn, "--name", name, *args],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.started.append(proc)
        return proc

    def stop_all(self) -> None:
        for proc in self.started:
            if proc.poll() is None:
                proc.kill()
            proc.communicate(timeout=10)


@pytest.fixture
def procs(db: str) -> Iterator[Processes]:
    p = Processes(db)
    try:
        yield p
    finally:
        p.stop_all()


def declare(conn: Conn) -> None:
    brooq.declare_topic(conn, "sleep", max_attempts=10)
    brooq.declare_topic(conn, "echo")


def counts(conn: Conn) -> dict[str, int]:
    return dict(conn.execute("select state, count(*) from brooq.job group by state").fetchall())


def test_a_job_of_a_killed_worker_is_reaped_and_done_by_another(procs: Processes, conn: Conn) -> None:
    declare(conn)
    job = brooq.enqueue(conn, "sleep", {"seconds": 60, "first_only": True})
    a = procs.start("victim", "--lease", "1s")
    wait_for(lambda: conn.execute("select 1 from brooq.job where id = %s and locked_by = 'victim'",
                                  [job.id]).fetchone(), what="the victim to claim the job")
    a.send_signal(signal.SIGKILL)
    a.wait(timeout=5)
    killed_at = time.monotonic()
    procs.start("rescuer", "--lease", "1s")
    fate = wait_for(lambda: (f := brooq.get_job(conn, job.id)) and f.state == "done" and f,
                    timeout=15, what="the rescuer to finish the job")
    assert time.monotonic() - killed_at < 10
    assert fate.result == {"slept": 0, "attempt": 2}
    assert fate.attempts == 2  # the reap did not charge an attempt; the second claim did
    assert fate.last_error is not None and "lease of worker victim expired" in fate.last_error


def test_sigterm_lets_jobs_in_flight_finish_and_claims_no_more(procs: Processes, conn: Conn) -> None:
    declare(conn)
    first = brooq.enqueue_many(conn, "sleep", [{"seconds": 3}] * 4)
    w = procs.start("graceful", "--lease", "3s", "--concurrency", "4", "--grace", "10s")
    # every handler started (its progress carried by a heartbeat, every second), not only
    # claimed: on a loaded machine a job claimed ahead of its thread is handed back unstarted
    wait_for(lambda: all((f := brooq.get_job(conn, j.id)) and f.progress is not None for j in first),
             timeout=15, what="4 handlers running")
    later = brooq.enqueue_many(conn, "sleep", [{"seconds": 0}] * 10)
    w.send_signal(signal.SIGTERM)
    out, _ = w.communicate(timeout=15)
    assert w.returncode == 0, out
    states = [brooq.get_job(conn, j.id) for j in first]
    assert [s.state for s in states if s] == ["done"] * 4, (out, [s.last_error for s in states if s])
    # None of the later jobs ran: each is pending, or was claimed ahead (prefetch) before
    # the signal and handed back unstarted ('preserve': failed, its attempt given back,
    # ready at once).
    rows = conn.execute("select state, attempts, available_at <= now() from brooq.job "
                        "where id = any(%s)", [[j.id for j in later]]).fetchall()
    assert {(state, attempts, ready) for state, attempts, ready in rows} <= {
        ("pending", 0, True), ("failed", 0, True)}, rows
    assert "stopped, every job settled" in out


def test_a_second_signal_stops_at_once(procs: Processes, conn: Conn) -> None:
    declare(conn)
    job = brooq.enqueue(conn, "sleep", {"seconds": 30})
    w = procs.start("impatient", "--lease", "1s", "--grace", "60s")
    # the handler runs (not merely claimed ahead: a stop hands unstarted jobs back)
    wait_for(lambda: (f := brooq.get_job(conn, job.id)) is not None and f.progress is not None,
             what="the handler to start")
    w.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    w.send_signal(signal.SIGINT)
    out, _ = w.communicate(timeout=5)
    assert w.returncode == 0, out
    # handed back at once, as when the grace runs out
    fate, ready = conn.execute("select state, available_at <= now() from brooq.job where id = %s",
                               [job.id]).fetchone() or (None, None)
    assert (fate, ready) == ("failed", True), out
    row = brooq.get_job(conn, job.id)
    assert row is not None and row.attempts == 0
    assert row.last_error is not None and "a second stop request" in row.last_error


def test_a_stop_past_its_grace_hands_the_running_jobs_back(procs: Processes, conn: Conn) -> None:
    """Handlers still running when the grace runs out: their jobs are ready again at once
    (settled 'preserve': the attempt given back, its stop recorded), not left processing
    until their lease expires and a reap returns them."""
    declare(conn)
    job = brooq.enqueue(conn, "sleep", {"seconds": 30})
    w = procs.start("hasty", "--lease", "3s", "--grace", "1s")  # a heartbeat a second shows progress
    wait_for(lambda: (f := brooq.get_job(conn, job.id)) is not None and f.progress is not None,
             what="the handler to start")
    w.send_signal(signal.SIGTERM)
    out, _ = w.communicate(timeout=10)
    assert w.returncode == 0, out
    row = conn.execute("select state, available_at <= now(), locked_by from brooq.job where id = %s",
                       [job.id]).fetchone()
    assert row == ("failed", True, None), out
    fate = brooq.get_job(conn, job.id)
    assert fate is not None and fate.attempts == 0
    assert fate.last_error is not None
    assert "worker hasty shut down before the handler finished (its shutdown grace 1s ran out)" in fate.last_error
    assert "stopping with 1 handler still running; handing its job back" in out  # one, not "1 handlers"


def test_workers_survive_a_postgresql_restart_and_finish_everything(
        procs: Processes, db: str, server: Any) -> None:
    with psycopg.connect(db, autocommit=True) as conn:
        declare(conn)
        ids = [j.id for j in brooq.enqueue_many(conn, "sleep", [{"seconds": 0.05}] * 300)]
    workers = [procs.start(f"survivor-{i}", "--lease", "2s", "--concurrency", "8") for i in range(2)]

    def done() -> int:
        with psycopg.connect(db, autocommit=True) as c:
            row = c.execute("select count(*) from brooq.job where state = 'done'").fetchone()
            return int(row[0]) if row else 0

    def connected() -> int:
        with psycopg.connect(db, autocommit=True) as c:
            row = c.execute("select count(distinct application_name) from pg_stat_activity"
                            " where application_name like 'brooq worker survivor-%'").fetchone()
            return int(row[0]) if row else 0

    # both connected before the restart, or a late starter has nothing to reconnect
    wait_for(lambda: done() >= 40 and connected() == 2, what="both workers at work before the restart")
    if server.cluster is not None:
        # -l: without a log file the new postmaster keeps pg_ctl's captured stdout open
        cluster = server.cluster
        cluster.restart("fast")
    else:
        with psycopg.connect(db, autocommit=True) as c:
            c.execute("select pg_terminate_backend(pid) from pg_stat_activity"
                      " where application_name like 'brooq worker%'")
    assert done() < 300, "the restart came too late to test anything"
    wait_for(lambda: done() == 300, timeout=60, what="every job done after the restart")
    assert all(w.poll() is None for w in workers), "a worker died"
    with psycopg.connect(db, autocommit=True) as conn:
        errors = conn.execute("select last_error from brooq.job where last_error is not null").fetchall()
        assert max(j.attempts for j in (brooq.get_job(conn, i) for i in ids) if j) <= 2
    # the only trace a restart may leave is a reaped lease, never a failed attempt
    assert all("lease of worker" in e[0] for e in errors), errors
    for w in workers:
        w.send_signal(signal.SIGTERM)
    for w in workers:
        out, _ = w.communicate(timeout=15)
        assert w.returncode == 0, out
        assert "reconnected to the database" in out, out
        assert "Traceback" not in out, out


def test_a_worker_started_while_the_server_is_down_waits_for_it(
        procs: Processes, db: str, server: Any) -> None:
    """A host that boots before its database: the worker waits (start_timeout, 5 minutes
    by default), says so at WARNING, and drains once the server is up."""
    if server.cluster is None:
        pytest.skip("needs a server this test may stop (not BROOQ_TEST_DSN)")
    with psycopg.connect(db, autocommit=True) as conn:
        declare(conn)
        ids = [j.id for j in brooq.enqueue_many(conn, "echo", [{"n": i} for i in range(20)])]
    cluster = server.cluster
    cluster.pg_ctl("stop", "-m", "fast", "-w")
    try:
        w = procs.start("early", "--lease", "2s")
        time.sleep(2.0)
        assert w.poll() is None, w.communicate()[0]  # still waiting, not gone
    finally:
        cluster.pg_ctl("start", "-w", "-t", "60", "-l", str(cluster.log))
    with psycopg.connect(db, autocommit=True) as conn:
        wait_for(lambda: all(j is not None and j.state == "done"
                             for j in (brooq.get_job(conn, i) for i in ids)),
                 timeout=30, what="every job done once the server is up")
    w.send_signal(signal.SIGTERM)
    out, _ = w.communicate(timeout=15)
    assert w.returncode == 0, out
    assert "early WARNING worker early: cannot connect to the database yet (" in out, out
    assert "waiting for it up to 300s (start_timeout)" in out, out
    assert "early INFO worker early: connected to the database after waiting " in out, out
    assert "Traceback" not in out, out


def test_a_worker_process_exits_nonzero_on_a_bad_environment(db: str) -> None:
    env = dict(os.environ, BROOQ_CONCURRENCY="lots", BROOQ_LEASE="5")
    done = subprocess.run([sys.executable, str(APP), db, "--name", "x"], env=env, check=False,
                          capture_output=True, text=True, timeout=30)
    assert done.returncode != 0
    assert "BROOQ_CONCURRENCY='lots'" in done.stderr and "BROOQ_LEASE='5'" in done.stderr


def test_a_poison_pill_that_kills_its_worker_every_time_ends_dead_at_max_lease_losses(
        procs: Processes, conn: Conn) -> None:
    """A handler that calls os._exit: each attempt kills its worker process (a
    replacement starts, as a supervisor would start one), its lease runs out, a reap
    returns it. The third lease loss in a row (topic crash: max_lease_losses 3) makes
    it dead, with the reason in last_error; the echo jobs claimed beside it are done,
    not dead with it (claim takes one job that lost its lease per call)."""
    declare(conn)
    brooq.declare_topic(conn, "crash", max_lease_losses=3)
    poison = brooq.enqueue(conn, "crash", {}).id
    others = [brooq.enqueue(conn, "echo", {"n": i}).id for i in range(6)]
    exits = 0
    deadline = time.monotonic() + 60
    while fate(conn, poison).state != "dead" and time.monotonic() < deadline:
        proc = procs.start(f"p{exits}", "--lease", "1s", "--concurrency", "4")
        while proc.poll() is None and fate(conn, poison).state != "dead" and time.monotonic() < deadline:
            time.sleep(0.05)
        if proc.poll() is not None:
            assert proc.returncode == 3, proc.communicate()[0]
            exits += 1
    f = fate(conn, poison)
    assert f.state == "dead", f
    assert exits == 3, "one process death per lease loss, and not one more"
    assert f.attempts == 3  # each claim charged an attempt; the reaps charged none
    assert f.last_error is not None and f.last_error.startswith("lease lost 3 times in a row (max_lease_losses 3)")
    proc = procs.start("after", "--lease", "1s")
    wait_for(lambda: all(fate(conn, j).state == "done" for j in others), what="the echo jobs")
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=15)
    assert counts(conn) == {"dead": 1, "done": 6}


# --- brooq worker --processes N ---------------------------------------------------------

def start_processes(db: str, log: Path, *args: str) -> subprocess.Popen[str]:
    """`brooq worker --processes 2 worker_app:from_env`, its output into ``log``."""
    with log.open("w") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "brooq.tools", "worker", "--dsn", db, "worker_app:from_env",
             "--processes", "2", "--progress", "off", *args],
            cwd=APP.parent, stdout=out, stderr=subprocess.STDOUT, text=True)


def children(pid: int) -> list[int]:
    return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def worker_sessions(conn: Conn) -> int:
    row = conn.execute("select count(*) from pg_stat_activity "
                       "where application_name like 'brooq worker %'").fetchone()
    return int(row[0]) if row else 0


def test_processes_share_the_jobs_and_stop_together_on_sigterm(
        db: str, conn: Conn, tmp_path: Path) -> None:
    declare(conn)
    jobs = brooq.enqueue_many(conn, "sleep", [{"seconds": 0.3}] * 40)
    log = tmp_path / "processes.log"
    parent = start_processes(db, log, "--concurrency", "2", "--lease", "2s", "--shutdown-grace", "10s")
    try:
        holders = wait_for(lambda: {r[0] for r in conn.execute(
            "select locked_by from brooq.job where state = 'processing'").fetchall()} if len(
            {r[0] for r in conn.execute("select locked_by from brooq.job where state = 'processing'"
                                        ).fetchall()}) == 2 else None,
            timeout=30, what="both worker processes to claim jobs")
        assert len(children(parent.pid)) == 2
        parent.send_signal(signal.SIGTERM)
        assert parent.wait(timeout=30) == 0, log.read_text()
    finally:
        if parent.poll() is None:
            for child in children(parent.pid):
                os.kill(child, signal.SIGKILL)
            parent.kill()
    out = log.read_text()
    assert out.count("stopped, every job settled") == 2, out
    assert len(holders) == 2
    # every job is settled: done, or never started (pending, or a prefetched one handed
    # back with its attempt given back); none is left in processing
    rows = conn.execute("select state, attempts from brooq.job where id = any(%s)",
                        [[j.id for j in jobs]]).fetchall()
    assert {s for s, _ in rows} <= {"done", "pending", "failed"}, rows
    assert all(a == 0 for s, a in rows if s != "done"), rows
    assert any(s == "done" for s, _ in rows)
    wait_for(lambda: worker_sessions(conn) == 0, what="every worker's connection to close")


def test_each_process_labels_its_progress_lines(db: str, conn: Conn, tmp_path: Path) -> None:
    declare(conn)
    log = tmp_path / "processes.log"
    parent = start_processes(db, log, "--concurrency", "1", "--progress", "log")
    try:
        wait_for(lambda: log.read_text().count(": topics ") == 2, what="both workers to start")
        parent.send_signal(signal.SIGTERM)
        assert parent.wait(timeout=30) == 0, log.read_text()
    finally:
        if parent.poll() is None:
            for child in children(parent.pid):
                os.kill(child, signal.SIGKILL)
            parent.kill()
    lines = [line for line in log.read_text().splitlines() if " jobs/s | " in line]
    # was two identical lines "HH:MM:SS      0 jobs/s | done 0 | ... | stopped", no label
    labels = sorted(line.split(":      0 jobs/s")[0][9:] for line in lines)
    assert labels == ["worker process 1", "worker process 2"], lines


def test_a_child_that_dies_is_restarted(db: str, conn: Conn, tmp_path: Path) -> None:
    declare(conn)
    log = tmp_path / "processes.log"
    parent = start_processes(db, log, "--concurrency", "2", "--lease", "2s")
    try:
        first = wait_for(lambda: len(children(parent.pid)) == 2 and children(parent.pid),
                         what="two children")
        os.kill(first[0], signal.SIGKILL)
        wait_for(lambda: "restarting it in 1s" in log.read_text(), what="the death to be reported")
        wait_for(lambda: len(set(children(parent.pid)) - set(first)) == 1, what="a new child")
        job = brooq.enqueue(conn, "echo", {"after": "restart"})
        wait_for(lambda: (f := brooq.get_job(conn, job.id)) and f.state == "done", what="the job")
        parent.send_signal(signal.SIGTERM)
        assert parent.wait(timeout=30) == 0, log.read_text()
    finally:
        if parent.poll() is None:
            for child in children(parent.pid):
                os.kill(child, signal.SIGKILL)
            parent.kill()
    assert "killed by SIGKILL" in log.read_text()


def test_children_run_the_same_command_without_processes() -> None:
    from brooq.tools.processes import child_argv

    assert child_argv(["worker", "app:w", "--processes", "3", "--concurrency", "8"], 2) == [
        "worker", "app:w", "--concurrency", "8", "--progress=log"]
    assert child_argv(["worker", "--processes=2", "app:w", "--name", "box", "--progress", "off"], 1) == [
        "worker", "app:w", "--name", "box", "--progress", "off", "--name=box-1"]


@pytest.mark.skipif(bool(os.environ.get("BROOQ_TEST_DSN")), reason="crashes a cluster of its own")
def test_a_postgresql_crash_loses_claims_never_outcomes() -> None:
    """The claim commits without waiting for its WAL flush (queries.CLAIM); settles wait.
    On a durable cluster whose WAL writer sleeps 10 s, 16 jobs are claimed and held by
    their handlers; PostgreSQL crashes (immediate shutdown: WAL not yet written is gone).
    The claims are lost: the jobs are pending again, attempts not charged (or claimed
    anew by the reconnected worker before the test looks, under a new token). Released,
    the handlers' settles are fenced off by the lost leases and write nothing; the jobs
    run again and end done, once, in their rows. Jobs settled before the crash (a settle
    waits for its flush) stay done."""
    from conftest import ROOT, psql_file
    from pgcluster import Cluster

    runs: dict[int, int] = {}
    lock = threading.Lock()
    release = threading.Event()
    with Cluster(durable=True, settings={"wal_writer_delay": "10s"}) as cluster:
        psql_file(cluster.dsn, ROOT / "sql" / "install.sql")
        with psycopg.connect(cluster.dsn, autocommit=True) as conn:
            brooq.declare_topic(conn, "crash.held", max_attempts=10)
            settled = [j.id for j in brooq.enqueue_many(conn, "crash.held", [{"hold": False}] * 20)]
        worker = brooq.Worker(cluster.dsn, name="crash", concurrency=16, lease=timedelta(seconds=60),
                              poll_interval=timedelta(milliseconds=100))

        @worker.handler("crash.held", max_attempts=10, timeout=None)
        def handle(job: brooq.Job) -> None:
            with lock:
                runs[job.id] = runs.get(job.id, 0) + 1
                first = runs[job.id] == 1
            if job.payload["hold"] and first:
                release.wait(60)

        def leases(ids: list[int]) -> dict[int, tuple[str, int, int | None]]:
            with psycopg.connect(cluster.dsn, autocommit=True) as c:
                return {r[0]: r[1:] for r in c.execute(
                    "select id, state::text, attempts, lease_token from brooq.job where id = any(%s)",
                    [ids]).fetchall()}

        def states(ids: list[int]) -> dict[str, int]:
            with psycopg.connect(cluster.dsn, autocommit=True) as c:
                return dict(c.execute("select state, count(*) from brooq.job where id = any(%s)"
                                      " group by state", [ids]).fetchall())

        with running(worker):
            wait_for(lambda: states(settled) == {"done": 20}, what="the first jobs settled")
            with psycopg.connect(cluster.dsn, autocommit=True) as conn:
                held = [j.id for j in brooq.enqueue_many(conn, "crash.held", [{"hold": True}] * 16)]
            wait_for(lambda: states(held) == {"processing": 16}, what="16 jobs claimed and held")
            before = leases(held)
            cluster.restart("immediate")
            # read at once; the reconnected worker may claim the pending jobs again first
            after = leases(held)
            release.set()
            wait_for(lambda: states(held) == {"done": 16}, timeout=60, what="the held jobs done after the crash")
            snapshot = worker.snapshot()
        assert states(settled) == {"done": 20}  # settled before the crash: flushed, kept
        with psycopg.connect(cluster.dsn, autocommit=True) as conn:
            attempts = [r[0] for r in conn.execute("select attempts from brooq.job where id = any(%s)",
                                                   [held])]
    print(f"\ncrash: held jobs after the restart {after}, handler runs {sorted(runs[i] for i in held)}, "
          f"lease lost {snapshot.lease_lost}, attempts {sorted(attempts)}")
    # the claims did not survive: each job is pending with nothing charged, or already
    # claimed again by the reconnected worker (one attempt, under a new lease token)
    for job_id, (state, charged, token) in after.items():
        assert (state, charged) in {("pending", 0), ("processing", 1)}, (before, after)
        assert token != before[job_id][2], (before, after)
    assert all(runs[i] == 2 for i in held) and attempts == [1] * 16  # ran again, one attempt charged
    assert snapshot.lease_lost >= 16  # the first runs' settles were fenced off


# Payloads PostgreSQL stores and Python's json module cannot decode: nested past the
# recursion limit, and an integer longer than int_max_str_digits (4300).
HOSTILE = {"RecursionError": "(repeat('[', 1500) || repeat(']', 1500))::jsonb",
           "ValueError": "('1' || repeat('0', 5000))::jsonb"}


def enqueue_hostile(conn: Conn, topic: str) -> dict[str, int]:
    ids = {}
    for cause, payload in HOSTILE.items():
        row = conn.execute(f"select id from brooq.enqueue(%s, {payload})", [topic]).fetchone()
        assert row is not None
        ids[cause] = int(row[0])
    return ids


def test_a_payload_python_cannot_decode_kills_its_own_job_only(procs: Processes, conn: Conn) -> None:
    declare(conn)
    normal = [j.id for j in brooq.enqueue_many(conn, "echo", [{"n": n} for n in range(5)])]
    hostile = enqueue_hostile(conn, "echo")
    # all seven in the first claim (concurrency 8): every neighbour of the hostile two
    w = procs.start("tolerant", "--lease", "2s", "--concurrency", "8")
    wait_for(lambda: conn.execute(
        "select count(*) = 7 from brooq.job where state in ('done', 'dead')").fetchone() == (True,),
        what="every job settled")
    time.sleep(0.5)  # a second claim, had there been one, would show now
    w.send_signal(signal.SIGTERM)
    out, _ = w.communicate(timeout=10)
    rows = conn.execute("select id, state, attempts, last_error from brooq.job").fetchall()
    by_id = {r[0]: r[1:] for r in rows}
    assert [by_id[i][:2] for i in normal] == [("done", 1)] * 5, (rows, out)
    for cause, job_id in hostile.items():
        state, attempts, error = by_id[job_id]
        assert (state, attempts) == ("dead", 1), (rows, out)
        assert error.startswith(f"payload cannot be decoded: {cause}: "), error
        assert len(error) < 400
    assert "lease lost" not in out and "unexpected error" not in out, out
    assert "lost the database connection" not in out, out
    assert f"job {hostile['RecursionError']} (echo) is dead after attempt 1/5: payload cannot be decoded" in out


def test_reading_a_job_python_cannot_decode_names_it(conn: Conn) -> None:
    brooq.declare_topic(conn, "echo")
    normal = brooq.enqueue(conn, "echo", {"n": 1}).id
    hostile = enqueue_hostile(conn, "echo")
    for cause, job_id in hostile.items():
        with pytest.raises(brooq.UndecodableJob) as raised:
            brooq.get_job(conn, job_id)
        assert raised.value.job_id == job_id
        assert str(raised.value).startswith(
            f"job {job_id}: its payload is JSON that Python cannot decode ({cause}: ")
        assert f"payload::text from brooq.jobs where id = {job_id}" in str(raised.value)
    # one such job hides no other: list_jobs gives it as an Undecodable
    jobs = {j.id: j for j in brooq.list_jobs(conn, topic="echo")}
    assert jobs[normal].payload == {"n": 1}
    for cause, job_id in hostile.items():
        payload = jobs[job_id].payload
        assert isinstance(payload, brooq.Undecodable) and payload.cause.startswith(f"{cause}: ")
    # the connection is unharmed, inside a transaction as well
    with conn.transaction():
        with pytest.raises(brooq.UndecodableJob):
            brooq.get_job(conn, hostile["ValueError"])
        assert fate(conn, normal).payload == {"n": 1}
    conn.execute("update brooq.job set state = 'dead' where id = %s", [hostile["ValueError"]])
    with pytest.raises(brooq.UndecodableJob):
        brooq.wait(conn, hostile["ValueError"], timeout=1)

    async def read() -> None:
        async with await psycopg.AsyncConnection.connect(conn.info.dsn, password=conn.info.password,
                                                         autocommit=True) as aconn:
            with pytest.raises(brooq.UndecodableJob):
                await brooq.aio.get_job(aconn, hostile["RecursionError"])
            with pytest.raises(brooq.UndecodableJob):
                await brooq.wait_async(aconn, hostile["ValueError"], timeout=1)
            assert (await brooq.aio.get_job(aconn, normal)) is not None

    asyncio.run(read())
