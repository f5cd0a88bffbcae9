"""pgqueuer's QueueManager with a no-op async entrypoint `noop`.

Usage: python -m bench.workers.pgqueuer_worker '<json config>'
(config: dsn, latency, batch_size)
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from datetime import timedelta

import psycopg
from pgqueuer import PsycopgDriver, Queries, QueueManager
from pgqueuer.models import Job

from bench.workers.report import Report


async def run(cfg: dict[str, object]) -> None:
    report = Report(bool(cfg["latency"]))
    conn = await psycopg.AsyncConnection.connect(str(cfg["dsn"]), autocommit=True)
    qm = QueueManager(Queries(PsycopgDriver(conn)))

    @qm.entrypoint("noop")  # type: ignore[untyped-decorator]
    async def noop(job: Job) -> None:
        report.seen(json.loads(job.payload) if job.payload else None)

    report.ready()
    await qm.run(batch_size=int(str(cfg.get("batch_size", 10))),
                 dequeue_timeout=timedelta(seconds=float(str(cfg.get("poll", 5.0)))))


def main() -> None:
    logging.basicConfig(level=logging.WARNING)
    asyncio.run(run(json.loads(sys.argv[1])))


if __name__ == "__main__":
    main()
