"""Live progress of a worker: one refreshing line in a terminal, plain log lines in a pipe.

A thread reads the worker's counters (``worker.snapshot()``) a few times a second and
shows jobs/s over the last few seconds, done, failed (waiting to retry), dead,
canceled, in flight and the elapsed time. It only reads: it never touches the
database or the worker's state.

    progress = Progress(worker.snapshot, sys.stderr)
    with progress:
        worker.run()
"""

from __future__ import annotations

import logging
import shutil
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, Self, TextIO

from brooq.messages import _
from brooq.states import SETTLED_COUNTS


class Snapshot(Protocol):
    """What progress reads of a worker snapshot (brooq.WorkerSnapshot has all of it)."""

    @property
    def done(self) -> int: ...
    @property
    def failed(self) -> int: ...
    @property
    def retried(self) -> int: ...
    @property
    def dead(self) -> int: ...
    @property
    def canceled(self) -> int: ...
    @property
    def lease_lost(self) -> int: ...
    @property
    def in_flight(self) -> int: ...
    @property
    def prefetched(self) -> int: ...
    @property
    def connected(self) -> bool: ...
    @property
    def stopping(self) -> bool: ...


def settled(c: Snapshot) -> int:
    """Attempts that ended, whatever their outcome (a lost lease included)."""
    return int(sum(getattr(c, count) for count in SETTLED_COUNTS)) + c.lease_lost


@dataclass(frozen=True)
class Reading:
    """One look at the counters, with the rates derived from the previous looks."""

    counters: Snapshot
    elapsed: float  # seconds since progress started
    rate: float  # settled attempts per second over the window
    peak: float  # highest rate seen so far


def format_line(r: Reading, *, final: bool = False) -> str:
    """The progress line: `1234 jobs/s | done 900 | failed 12 | dead 3 | ...`; `final`:
    the line shown once the worker's run has returned (it says `stopped`)."""
    c = r.counters
    line = _("progress.line", rate=r.rate, done=c.done, failed=c.failed + c.retried,
               dead=c.dead, canceled=c.canceled)
    if c.lease_lost:
        line += _("progress.lease_lost", count=c.lease_lost)
    line += _("progress.in_flight", count=c.in_flight)
    if c.prefetched:
        line += _("progress.prefetched", count=c.prefetched)
    line += f" | {format_elapsed(r.elapsed)}"
    if final:  # the run returned: a worker between runs is neither stopping nor connecting
        line += _("progress.stopped")
    elif c.stopping:
        line += _("progress.stopping")
    elif not c.connected:
        line += _("progress.connecting")
    return line


def format_elapsed(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02}:{secs:02}" if hours else f"{minutes}:{secs:02}"


class RateWindow:
    """Settled attempts per second over the last `window` seconds."""

    def __init__(self, window: float = 3.0) -> None:
        self.window = window
        self._points: deque[tuple[float, int]] = deque()
        self.peak = 0.0

    def add(self, at: float, total: int) -> float:
        self._points.append((at, total))
        while len(self._points) > 2 and at - self._points[1][0] >= self.window:
            self._points.popleft()
        first_at, first_total = self._points[0]
        span = at - first_at
        rate = (total - first_total) / span if span > 0 else 0.0
        if span >= min(1.0, self.window):  # a rate over a blink is noise, not a peak
            self.peak = max(self.peak, rate)
        return rate


class Progress:
    """Shows a worker's progress from a thread until stopped (a context manager).

    `live` (default: the stream is a terminal) chooses one line rewritten in place
    every `refresh` seconds; otherwise a plain line is written every `log_every`
    seconds. The counters are read every `refresh` seconds either way, and the rate
    is taken over the last `window` seconds. `note()` prints a message without
    garbling the live line.
    """

    def __init__(self, snapshot: Callable[[], Snapshot], stream: TextIO | None = None, *,
                 live: bool | None = None, refresh: float = 0.25, log_every: float = 5.0,
                 window: float = 3.0, prefix: str = "") -> None:
        self.snapshot = snapshot
        self.stream = stream if stream is not None else sys.stderr
        self.live = self.stream.isatty() if live is None else live
        self.refresh = refresh  # how often the counters are read (and a live line redrawn)
        self.log_every = log_every
        self.prefix = prefix
        self.rates = RateWindow(window)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._started = time.monotonic()
        self._shown = False  # a live line is on the screen
        self.last: Reading | None = None

    def start(self) -> Self:
        self._started = time.monotonic()
        try:  # the rate's first point: the first line shows the rate since start, not 0
            at_start = settled(self.snapshot())
        except Exception:  # noqa: BLE001 - a worker still starting has counted nothing
            at_start = 0
        self.rates.add(self._started, at_start)
        self._thread = threading.Thread(target=self._loop, name="brooq-progress", daemon=True)
        self._thread.start()
        return self

    def stop(self, *, show: bool = True) -> Reading | None:
        """Stop the thread and leave the last reading on screen (or in the log), marked
        `stopped`: call it once the worker's run has returned. With show=False, only
        clear the live line."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        reading = self.read()
        if reading is not None and show:
            self._show(reading, final=True)
        elif self.live and self._shown:
            with self._lock:
                self.stream.write("\r\x1b[2K")
                self.stream.flush()
                self._shown = False
        return reading

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        self.stop(show=exc_type is None)  # a worker that failed to start ran nothing to show

    def read(self) -> Reading | None:
        """Take one snapshot now; None when the worker cannot give one yet."""
        try:
            counters = self.snapshot()
        except Exception:  # noqa: BLE001 - a worker still starting has nothing to show
            return None
        now = time.monotonic()
        rate = self.rates.add(now, settled(counters))
        self.last = Reading(counters, now - self._started, rate, self.rates.peak)
        return self.last

    def note(self, message: str) -> None:
        """Print a message on its own line; the live line is redrawn below it."""
        with self._lock:
            if self.live and self._shown:
                self.stream.write("\r\x1b[2K")
            self.stream.write(f"{message}\n")
            self._shown = False
            self.stream.flush()
        if self.live and self.last is not None and not self._stop.is_set():
            self._show(self.last)

    def _loop(self) -> None:
        next_log = time.monotonic() + self.log_every
        while not self._stop.wait(self.refresh):
            reading = self.read()
            if reading is None:
                continue
            if self.live:
                self._show(reading)
            elif time.monotonic() >= next_log:
                next_log += self.log_every
                self._show(reading)

    def _show(self, reading: Reading, *, final: bool = False) -> None:
        line = self.prefix + format_line(reading, final=final)
        with self._lock:
            if self.live:
                width = shutil.get_terminal_size((100, 24)).columns
                self.stream.write("\r\x1b[2K" + line[: max(width - 1, 20)])
                self._shown = not final
                if final:
                    self.stream.write("\n")
            else:
                stamp = time.strftime("%H:%M:%S")
                self.stream.write(f"{stamp} {line}\n")
            self.stream.flush()


class LogToProgress(logging.Handler):
    """A logging handler that prints through Progress.note, above the live line."""

    def __init__(self, progress: Progress, level: int = logging.NOTSET) -> None:
        super().__init__(level)
        self.progress = progress

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.progress.note(self.format(record))
        except Exception:  # noqa: BLE001 - logging must never raise
            self.handleError(record)
