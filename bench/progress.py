"""Live progress on stderr: one line per second during long steps."""

from __future__ import annotations

import sys
import time


class Progress:
    def __init__(self, label: str, quiet: bool = False) -> None:
        self.label = label
        self.quiet = quiet
        self._next = time.monotonic() + 1.0
        self._tty = sys.stderr.isatty()

    def update(self, text: str, done: int | None = None, t0: float | None = None) -> None:
        now = time.monotonic()
        if self.quiet or now < self._next:
            return
        self._next = now + (1.0 if self._tty else 2.0)
        rate = ""
        if done is not None and t0 is not None and now > t0:
            rate = f" ({done / (now - t0):,.0f}/s)"
        line = f"  {self.label}: {text}{rate}"
        if self._tty:
            sys.stderr.write("\r\033[K" + line)
        else:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()

    def done(self, text: str) -> None:
        if self._tty:
            sys.stderr.write("\r\033[K")
        sys.stderr.write(f"  {self.label}: {text}\n")
        sys.stderr.flush()
