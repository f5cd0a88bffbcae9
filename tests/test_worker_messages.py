"""What a worker tells its user, in a plain `python` process with no logging configured:
handler failures and dead jobs on stderr; configuration errors at start in one line
with a hint; a lost server said once, retried with backoff."""

from __future__ import annotations

import logging
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from pathlib import Path

import brooq
import psycopg
import pytest
from conftest import Server
from pgcluster import free_port
from psycopg import sql
from helpers import FAST, running, wait_for


def python(code: str, tmp_path: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run `code` as a user's script (app.py) in a fresh interpreter: logging not configured."""
    script = tmp_path / "app.py"
    script.write_text(textwrap.dedent(code))
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=timeout, check=False, cwd=tmp_path)


def test_a_failing_handler_and_a_dead_job_reach_stderr_without_logging_setup(db: str, tmp_path: Path) -> None:
    done = python(f"""
        import threading, brooq, psycopg
        from datetime import timedelta
        worker = brooq.Worker({db!r}, lease=timedelta(seconds=2), poll_interval=timedelta(milliseconds=50))

        @worker.handler("email", max_attempts=2, backoff_base=timedelta(milliseconds=10))
        def send(job):
            if job.attempt == 2:
                threading.Timer(0.5, worker.stop).start()
            return undefined_name  # NameError, as in the issue

        worker.declare_topics()
        with psycopg.connect({db!r}, autocommit=True) as conn:
            job = brooq.enqueue(conn, "email", {{}})
            worker.run()
            print(brooq.get_job(conn, job.id).state)
    """, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "dead"
    err = done.stderr
    assert "attempt 1/2 failed: NameError: name 'undefined_name' is not defined" in err, err
    assert "Traceback (most recent call last)" in err and "return undefined_name" in err, err
    assert "is dead after attempt 2/2: NameError" in err, err


def test_a_retry_signal_is_not_an_error(db: str, tmp_path: Path) -> None:
    done = python(f"""
        import threading, brooq, psycopg
        from datetime import timedelta
        worker = brooq.Worker({db!r}, lease=timedelta(seconds=2), poll_interval=timedelta(milliseconds=50))

        @worker.handler("email", max_attempts=3, backoff_base=timedelta(milliseconds=10))
        def send(job):
            if job.attempt == 1:
                raise brooq.Retry(reason="the bank said 429")
            threading.Timer(0.3, worker.stop).start()

        worker.declare_topics()
        with psycopg.connect({db!r}, autocommit=True) as conn:
            job = brooq.enqueue(conn, "email", {{}})
            worker.run()
            print(brooq.get_job(conn, job.id).state)
    """, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "done"
    assert "the bank said 429" not in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_python_app_py_says_what_it_runs_and_when_it_stops(db: str, tmp_path: Path) -> None:
    dsn = f"{db} password=not-to-be-shown"  # trust authentication: the password is not checked
    script = tmp_path / "app.py"
    script.write_text(textwrap.dedent(f"""
        import brooq

        worker = brooq.Worker({dsn!r}, concurrency=3)

        @worker.handler("email")
        def send(job: brooq.Job) -> None:
            pass

        if __name__ == "__main__":
            worker.run()
    """))
    proc = subprocess.Popen([sys.executable, str(script)], stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    assert proc.stderr is not None
    silent = threading.Timer(20, proc.kill)  # a worker that says nothing: no line, not a hang
    silent.start()
    try:
        first = proc.stderr.readline()  # was nothing at all until the first failure
        proc.send_signal(signal.SIGTERM)
        rest = proc.communicate(timeout=20)[1]
    finally:
        silent.cancel()
        if proc.poll() is None:
            proc.kill()
    info = psycopg.conninfo.conninfo_to_dict(db)
    assert re.fullmatch(
        rf"worker \S+: topics email, concurrency 3, lease 30s, database "
        rf"postgresql://{info['user']}@{info['host']}:{info['port']}/{info['dbname']}\n", first), first
    assert proc.returncode == 0, rest
    assert "stopping; 0 jobs in flight" in rest and "stopped, every job settled" in rest, rest
    assert "not-to-be-shown" not in first + rest


APP = """
import brooq

worker = brooq.Worker()

@worker.handler("email")
def send(job: brooq.Job) -> None:
    pass

if __name__ == "__main__":
    worker.run()
"""


def brooq_cli(*args: str, cwd: Path, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(Path(sys.executable).with_name("brooq")), *args], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout, check=False)


@pytest.mark.parametrize("where", ["no schema", "no database", "wrong port", "no such role"])
def test_a_worker_pointed_at_the_wrong_place_stops_with_one_line_and_a_hint(
        where: str, server: Server, tmp_path: Path) -> None:
    """Before: it retried forever, every 0.1 s to 5 s, each time "database unavailable"."""
    (tmp_path / "app.py").write_text(APP)
    name = f"brooq_empty_{uuid.uuid4().hex[:8]}"
    dsn = {"no schema": server.dsn_for(name), "no database": server.dsn_for(name),
           "wrong port": f"postgresql://postgres@127.0.0.1:{free_port()}/postgres",
           "no such role": psycopg.conninfo.make_conninfo(server.admin_dsn, user="nobody_here")}[where]
    if where == "no schema":
        server.create_db(name)
    try:
        # a server that is not up is waited for (start_timeout): 0 stops at once, as a wrong
        # database or role always does
        wait = ["--start-timeout", "0s"] if where == "wrong port" else []
        done = brooq_cli("worker", "app:worker", "--dsn", dsn, *wait, cwd=tmp_path)
    finally:
        server.drop_db(name)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    errors = [line for line in done.stderr.splitlines() if "error" in line.lower()]
    assert len(errors) == 1 and errors[0].startswith("brooq: error: "), done.stderr
    hint = {"no schema": "brooq deploy", "no database": f'database "{name}" does not exist',
            "wrong port": "check the DSN", "no such role": 'role "nobody_here" does not exist'}[where]
    assert hint in errors[0] and "hint" in errors[0], errors[0]
    assert errors[0].count("hint:") == 1, errors[0]  # said once


def test_a_lost_server_is_said_once_and_reconnected_is_info(
        db: str, server: Server, caplog: pytest.LogCaptureFixture) -> None:
    with psycopg.connect(db, autocommit=True) as conn:
        brooq.declare_topic(conn, "email")  # declared already: the worker creates nothing (no WARNING)
    worker = brooq.Worker(db, **FAST)

    @worker.handler("email")
    def send(job: brooq.Job) -> None:
        pass

    name = sql.Identifier(psycopg.conninfo.conninfo_to_dict(db)["dbname"])
    with caplog.at_level(logging.DEBUG, logger="brooq.worker"), running(worker):
        server.execute(sql.SQL("alter database {} with allow_connections false").format(name))
        try:
            server.execute("select pg_terminate_backend(pid) from pg_stat_activity"
                           " where application_name like 'brooq worker%'")
            wait_for(lambda: not worker.snapshot().connected, what="the worker to notice")
            time.sleep(2.0)  # many reconnection attempts (0.1 s, 0.2 s, 0.4 s, ...)
        finally:
            server.execute(sql.SQL("alter database {} with allow_connections true").format(name))
        wait_for(lambda: worker.snapshot().connected, timeout=15, what="the worker to reconnect")
    ours = [r for r in caplog.records if r.name == "brooq.worker"]
    warnings = [r.getMessage() for r in ours if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "lost the database connection" in warnings[0], warnings
    retries = [r for r in ours if "reconnect failed" in r.getMessage()]
    assert len(retries) >= 3 and all(r.levelno == logging.DEBUG for r in retries)
    reconnected = [r for r in ours if "reconnected" in r.getMessage()]
    assert [r.levelno for r in reconnected] == [logging.INFO]
