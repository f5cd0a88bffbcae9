"""The worker of the tests that kill, signal or outlive PostgreSQL, as a real process:

    python tests/worker_app.py DSN --name NAME [--lease 1s] [--concurrency 4] [--grace 10s]

or `brooq worker worker_app:from_env`. What the tests share is in tests/helpers.py.

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
import time
from datetime import timedelta
from typing import Any

import brooq


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
