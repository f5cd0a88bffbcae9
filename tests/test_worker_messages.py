"""What a worker tells its user, in a plain `python` process with no logging configured:
handler failures and dead jobs on stderr; configuration errors at start in one line
with a hint; a lost server said once, retried with backoff."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from pathlib import Path

import pytest


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
    assert "429" not in done.stderr and "Traceback" not in done.stderr, done.stderr
