"""brooq's reference worker (brooq.Worker) with a no-op handler on topic `bench`.

Usage: python -m bench.workers.brooq_worker '<json config>'
(config: dsn, latency, concurrency, prefetch, and handler: the topic settings of Worker.handler,
e.g. {"max_in_flight": 10000}, which the worker declares at start; durations in seconds.
topics: the topics it handles (default ["bench"]). soak: the handler sleeps the payload's
"ms" and fails the first attempt of a job whose payload says "fail"; only first
attempts report their seq, so that a retry is not taken for a late start)
"""

from __future__ import annotations

import json
import signal
import sys
import threading
import time
from datetime import timedelta
from typing import Any

import brooq

from bench.workers.report import Report

DURATIONS = {"backoff_base", "backoff_max", "retention", "max_lease", "max_execution"}


def main() -> None:
    cfg = json.loads(sys.argv[1])
    report = Report(cfg["latency"])
    worker_class = getattr(brooq, "Worker", None)
    if worker_class is None:
        sys.exit("brooq.Worker does not exist yet (python/brooq/worker.py)")
    w = worker_class(cfg["dsn"], concurrency=int(cfg.get("concurrency", 100)),
                     prefetch=cfg.get("prefetch"))

    settings = {k: timedelta(seconds=v) if k in DURATIONS else v
                for k, v in cfg.get("handler", {}).items()}
    soak = bool(cfg.get("soak"))

    def noop(job: Any) -> None:
        if not soak:
            report.seen(job.payload)
            return
        report.seen(job.payload if job.attempt == 1 else None)
        time.sleep(job.payload["ms"] / 1000)
        if job.payload.get("fail") and job.attempt == 1:
            raise RuntimeError("the soak's planned failure (retried)")

    for topic in cfg.get("topics") or [cfg.get("topic", "bench")]:
        w.handler(topic, **settings)(noop)

    def stop(*_: object) -> None:
        threading.Thread(target=w.stop, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    report.ready()
    w.run()


if __name__ == "__main__":
    main()
