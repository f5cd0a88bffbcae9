"""What every benchmark worker reports to the orchestrator, on stdout.

A handler calls `Report.seen(payload)` first thing. A daemon thread prints, every
100 ms while something changed:
    P <count> <first_ns> <last_ns>      jobs started so far, first and last start time
    L <seq> <t_ns> <seq> <t_ns> ...     (latency mode) each job's start time by seq
Times are time.monotonic_ns(), the same clock for every process on the machine
(CLOCK_MONOTONIC; node's process.hrtime.bigint() reads it too).
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any


class Report:
    def __init__(self, latency: bool) -> None:
        self.latency = latency
        self.count = 0
        self.first = 0
        self.last = 0
        self.starts: list[int] = []
        self._printed = -1
        self._lock = threading.Lock()
        threading.Thread(target=self._loop, daemon=True).start()

    def seen(self, payload: Any) -> None:
        t = time.monotonic_ns()
        with self._lock:  # handlers may run in many threads
            if not self.count:
                self.first = t
            self.count += 1
            self.last = t
            if self.latency:
                seq = payload.get("seq", -1) if isinstance(payload, dict) else -1
                self.starts.append(seq)
                self.starts.append(t)

    def ready(self) -> None:
        print("R", flush=True)

    def flush(self) -> None:
        with self._lock:
            batch, self.starts = self.starts, []
            count, first, last = self.count, self.first, self.last
        lines = []
        if batch:
            lines.append("L " + " ".join(map(str, batch)))
        if count != self._printed:
            self._printed = count
            lines.append(f"P {count} {first} {last}")
        if lines:
            sys.stdout.write("\n".join(lines) + "\n")
            sys.stdout.flush()

    def _loop(self) -> None:
        while True:
            time.sleep(0.1)
            try:
                self.flush()
            except (BrokenPipeError, ValueError):
                return
