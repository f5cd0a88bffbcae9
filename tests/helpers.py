"""What the tests share beside conftest.py's fixtures: the `brooq` command as a
subprocess, topics and jobs written through SQL, a job's fate, polling for a
condition, and a worker run in a thread of the test."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import brooq
import psycopg

Conn = psycopg.Connection[Any]

# In-process worker tests: short leases and polls, so they run in seconds.
FAST = {"poll_interval": timedelta(milliseconds=100), "lease": timedelta(seconds=1.5)}

# The `brooq` command of the test's virtualenv (or the module, when it has no script).
BIN = Path(sys.executable).parent / "brooq"
COMMAND = [str(BIN)] if BIN.exists() else [sys.executable, "-m", "brooq.tools"]


def brooq_cli(*args: str, dsn: str | None = None, env: dict[str, str] | None = None,
              cwd: Path | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run the brooq command without the caller's BROOQ_* variables; --dsn last when given."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("BROOQ_")}
    full_env |= env or {}
    argv = [*COMMAND, *args] + (["--dsn", dsn] if dsn else [])
    return subprocess.run(argv, capture_output=True, text=True, env=full_env, cwd=cwd,
                          timeout=timeout, check=False)


def run_fresh(code: str) -> str:
    """Run ``code`` in a new Python process that imports the brooq these tests import
    (what it loads at import, not what this process already has); its stdout."""
    package = str(Path(brooq.__file__).resolve().parent.parent)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([package, os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env=env).stdout


@contextmanager
def connected(db: Conn | str) -> Iterator[Conn]:
    """The connection given, or an autocommit one to the DSN given, closed after."""
    if isinstance(db, psycopg.Connection):
        yield db
        return
    with psycopg.connect(db, autocommit=True) as conn:
        yield conn


def declare(db: Conn | str, topic: str = "mail", **settings: object) -> None:
    """brooq.declare_topic(topic, <setting> => value, ...) in SQL, on a connection or a DSN."""
    names = "".join(f", {k} => %({k})s" for k in settings)
    with connected(db) as conn:
        conn.execute(f"select brooq.declare_topic(%(topic)s{names})", {"topic": topic, **settings})


def enqueue(db: Conn | str, topic: str, n: int = 1) -> list[int]:
    """n jobs on topic in one statement, payloads {"n": 1} .. {"n": n}; their ids in order."""
    with connected(db) as conn:
        rows = conn.execute(
            "select id from brooq.enqueue_many(%s, array(select jsonb_build_object('n', g)"
            " from generate_series(1, %s) g))", (topic, n)).fetchall()
    return [int(r[0]) for r in rows]


def fate(db: Conn | str, job_id: int) -> brooq.JobFate:
    """A job's fate, which must exist, on a connection or a DSN."""
    with connected(db) as conn:
        f = brooq.get_job(conn, job_id)
    assert f is not None
    return f


def wait_for(predicate: Callable[[], Any], timeout: float = 15.0, what: str = "condition") -> Any:
    """Poll until predicate() is truthy; its value. AssertionError after timeout seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.02)


@contextmanager
def running(worker: brooq.Worker) -> Iterator[brooq.Worker]:
    """Run a worker in a thread for the duration of the block; stop it (no grace) after."""
    thread = threading.Thread(target=worker.run, name=f"test-{worker.name}", daemon=True)
    thread.start()
    try:
        wait_for(lambda: worker.snapshot().connected, what="the worker to connect")
        yield worker
    finally:
        worker.stop(timedelta(0))
        thread.join(timeout=10)
        assert not thread.is_alive(), "the worker did not stop"
