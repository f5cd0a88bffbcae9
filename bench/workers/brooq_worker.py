"""brooq's reference worker (brooq.Worker) with a no-op handler on topic `bench`.

Usage: python -m bench.workers.brooq_worker '<json config>'
(config: dsn, latency, concurrency, prefetch, and handler: the topic settings of Worker.handler,
e.g. {"max_in_flight": 10000}, which the worker declares at start)
"""

from __future__ import annotations

import json
import signal
import sys
import threading
from typing import Any

import brooq

from bench.workers.report import Report


def main() -> None:
    cfg = json.loads(sys.argv[1])
    report = Report(cfg["latency"])
    worker_class = getattr(brooq, "Worker", None)
    if worker_class is None:
        sys.exit("brooq.Worker does not exist yet (python/brooq/worker.py)")
    w = worker_class(cfg["dsn"], concurrency=int(cfg.get("concurrency", 100)),
                     prefetch=cfg.get("prefetch"))

    @w.handler(cfg.get("topic", "bench"), **cfg.get("handler", {}))  # type: ignore[untyped-decorator]
    def noop(job: Any) -> None:
        report.seen(job.payload)

    def stop(*_: object) -> None:
        threading.Thread(target=w.stop, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    report.ready()
    w.run()


if __name__ == "__main__":
    main()
