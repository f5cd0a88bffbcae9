"""What surrounds a worker's run: the signals that stop it, and the guard that keeps
it from running while `brooq worker MODULE:OBJECT` imports MODULE.

The worker (worker.py), the partitioned worker (partitions.py) and the process
supervisor (tools/processes.py) stop on SIGTERM and SIGINT the same way: each takes
the signals for the length of its run, from the main thread only (Python delivers
signals there), and gives the previous handlers back after it.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import signal
import sys
import threading
from collections.abc import Callable, Iterator

from brooq.errors import RunAtImport

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


@contextlib.contextmanager
def stop_signals(on_signal: Callable[[], None]) -> Iterator[None]:
    """Within this block, SIGTERM and SIGINT call ``on_signal`` (in the main thread,
    between two bytecodes: set flags, write a pipe, nothing else). Outside the main
    thread the signals are left alone."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, lambda signum, frame: on_signal()) for s in STOP_SIGNALS}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def announce(log: logging.Logger, text: str) -> None:
    """Log a run's start or stop at INFO; with no logging configured at all (a plain
    `python app.py`: no handler on the logger nor its ancestors), print it on stderr
    too, as `brooq worker` shows it: a worker that says nothing looks like it hangs."""
    log.info(text)
    if not log.hasHandlers():  # INFO would go nowhere (logging.lastResort shows WARNING+)
        sys.stderr.write(f"{text}\n")
        sys.stderr.flush()


# Set while `brooq worker MODULE:OBJECT` imports MODULE: a worker.run() then would run
# the worker inside the import, before the command could.
_loading: contextvars.ContextVar[str | None] = contextvars.ContextVar("brooq_loading", default=None)


@contextlib.contextmanager
def loading(spec: str) -> Iterator[None]:
    """Within this block (a tool importing the module of ``spec``), Worker.run() raises
    RunAtImport instead of running."""
    token = _loading.set(spec)
    try:
        yield
    finally:
        _loading.reset(token)


def refuse_run_at_import() -> None:
    """RunAtImport when called inside loading(): the module runs its worker as it is
    imported, and the command that imports it runs the worker itself."""
    if (spec := _loading.get()) is not None:
        module = spec.partition(":")[0]
        raise RunAtImport(
            f"module {module!r} runs worker.run() as it is imported, and `brooq worker {spec}` "
            "runs the worker itself: put worker.run() under `if __name__ == \"__main__\":`")
