"""procrastinate's worker with a no-op async task `noop` on queue `bench`.

Usage: python -m bench.workers.procrastinate_worker '<json config>'
(config: dsn, latency, concurrency)
"""

from __future__ import annotations

import json
import logging
import sys

import procrastinate

from bench.workers.report import Report


def main() -> None:
    cfg = json.loads(sys.argv[1])
    logging.basicConfig(level=logging.WARNING)
    report = Report(cfg["latency"])
    app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=cfg["dsn"]))

    @app.task(name="noop", queue="bench")  # type: ignore[untyped-decorator]
    async def noop(seq: int) -> None:
        report.seen({"seq": seq})

    report.ready()
    app.run_worker(queues=["bench"], concurrency=int(cfg.get("concurrency", 10)), wait=True)


if __name__ == "__main__":
    main()
