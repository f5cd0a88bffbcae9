"""Worker processes and helpers for the worker tests.

As a script: a real worker process for the tests that kill, signal or outlive
PostgreSQL:

    python tests/worker_app.py DSN --name NAME [--lease 1s] [--concurrency 4] [--grace 10s]

Handlers:
  sleep  payload {"seconds": s, "first_only": bool}: sleeps s seconds (only on the
         first attempt when first_only), then returns {"slept": s, "attempt": n}.
  echo   returns the payload.
  crash  a poison pill: kills its own process (os._exit(3)) every time; the topic
         has max_lease_losses 3.
"""

from __future__ import annotations

import argparse
import logging
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

# In-process worker tests: short leases and polls, so they run in seconds.
FAST = {"poll_interval": timedelta(milliseconds=100), "lease": timedelta(seconds=1.5)}


def run_fresh(code: str) -> str:
    """Run ``code`` in a new Python process that imports the brooq these tests import
    (what it loads at import, not what this process already has); its stdout."""
    package = str(Path(brooq.__file__).resolve().parent.parent)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([package, os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env=env).stdout


def fate(conn: psycopg.Connection[Any], job_id: int) -> brooq.JobFate:
    """A job's fate, which must exist."""
    f = brooq.get_job(conn, job_id)
    assert f is not None
    return f


def build(dsn: str, name: str, lease: timedelta, concurrency: int, grace: timedelta) -> brooq.Worker:
    return register(brooq.Worker(dsn, name=name, lease=lease, concurrency=concurrency,
                                 shutdown_grace=grace, poll_interval=timedelta(milliseconds=200)))


def from_env() -> brooq.Worker:
    """For `brooq worker worker_app:from_env`: settings from BROOQ_* and the command line."""
    return register(brooq.Worker(poll_interval=timedelta(milliseconds=200)))


def register(worker: brooq.Worker) -> brooq.Worker:
    @worker.handler("sleep", max_attempts=10, timeout=None)
    def sleep(job: brooq.Job) -> dict[str, Any]:
        seconds = float(job.payload.get("seconds", 0))
        if job.payload.get("first_only") and job.attempt > 1:
            seconds = 0
        job.progress(0.0, "started")  # tests see the handler run (the next heartbeat carries it)
        time.sleep(seconds)
        return {"slept": seconds, "attempt": job.attempt}

    @worker.handler("echo")
    def echo(job: brooq.Job) -> Any:
        return job.payload

    @worker.handler("crash", max_lease_losses=3, timeout=None)
    def crash(job: brooq.Job) -> Any:
        os._exit(3)

    return worker


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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("dsn")
    parser.add_argument("--name", required=True)
    parser.add_argument("--lease", type=brooq.parse_duration, default=timedelta(seconds=1))
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--grace", type=brooq.parse_duration, default=timedelta(seconds=10))
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format=f"{args.name} %(levelname)s %(message)s")
    build(args.dsn, args.name, args.lease, args.concurrency, args.grace).run()


if __name__ == "__main__":
    main()
