"""A worker process for tests/test_flow_workers.py:

    python tests/flow_app.py DSN NAME AUDIT_FILE

One handler, `limited` (max_in_flight 3, declared by the worker at start, as every
worker of the topic does): sleeps payload["seconds"], and appends "start end" (the
wall clock around its run) and payload["group"] (or "-") to AUDIT_FILE, one line
per execution.
"""

from __future__ import annotations

import os
import sys
import time
from datetime import timedelta

import brooq

LIMIT = 3


def main() -> None:
    dsn, name, audit = sys.argv[1:4]
    worker = brooq.Worker(dsn, name=name, concurrency=4, lease=timedelta(seconds=2),
                          poll_interval=timedelta(milliseconds=50))

    @worker.handler("limited", max_in_flight=LIMIT, timeout=None)
    def limited(job: brooq.Job) -> None:
        start = time.time()
        time.sleep(float(job.payload.get("seconds", 0.02)))
        line = f"{start:.6f} {time.time():.6f} {job.payload.get('group', '-')}\n".encode()
        fd = os.open(audit, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line)  # one write per line: O_APPEND keeps lines whole across processes
        finally:
            os.close(fd)

    worker.run()


if __name__ == "__main__":
    main()
