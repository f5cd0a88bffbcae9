"""Where handlers run, and how the worker loop is woken up.

- ThreadPool: daemon threads for sync handlers (a hung handler never blocks exit).
- EventLoop: one asyncio event loop in its own daemon thread for async handlers.
- Waker: a self-pipe the loop sleeps on; any thread, and signal handlers, may wake it.
"""

from __future__ import annotations

import asyncio
import os
import queue
import select
import threading
from collections.abc import Callable, Coroutine
from typing import Any


class Waker:
    """Sleep until woken or until a timeout; wake() is safe from threads and signal handlers.

    Only the first wake() after a wait() writes to the pipe: a burst of handlers
    finishing costs one system call and one wake-up of the sleeper, not one each.
    """

    def __init__(self) -> None:
        self._r, self._w = os.pipe()
        os.set_blocking(self._r, False)
        os.set_blocking(self._w, False)
        self._armed = True  # no byte in the pipe since the last wait(): the next wake() writes

    def wake(self) -> None:
        if not self._armed:
            return  # a byte is already in the pipe; the sleeper looks at everything when it wakes
        self._armed = False
        try:
            os.write(self._w, b"x")
        except (BlockingIOError, OSError):
            pass  # the pipe is full (already woken) or closed (shutting down)

    def wait(self, timeout: float) -> None:
        """Sleep until a wake() (including one since the last wait()) or ``timeout`` seconds.

        The caller looks for work after wait() returns: anything a waker published
        before calling wake() is visible then."""
        if self._armed:
            select.select([self._r], [], [], max(0.0, timeout))
        try:
            while os.read(self._r, 4096):
                pass
        except BlockingIOError:
            pass
        self._armed = True

class ThreadPool:
    """A fixed set of daemon threads taking (function, argument) items from a queue."""

    def __init__(self, size: int, name: str) -> None:
        self._queue: queue.SimpleQueue[tuple[Callable[[Any], None], Any] | None] = queue.SimpleQueue()
        self._threads = [threading.Thread(target=self._work, name=f"{name}-{i}", daemon=True)
                         for i in range(size)]
        for t in self._threads:
            t.start()

    def submit(self, fn: Callable[[Any], None], arg: Any) -> None:
        self._queue.put((fn, arg))

    def _work(self) -> None:
        while (item := self._queue.get()) is not None:
            fn, arg = item
            fn(arg)

    def stop(self) -> None:
        """Let idle threads end; busy ones end after their handler (never waited for)."""
        for _ in self._threads:
            self._queue.put(None)


class EventLoop:
    """An asyncio event loop running in a daemon thread."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self._tasks: set[asyncio.Task[None]] = set()  # the loop keeps only weak references
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def spawn(self, coros: list[Coroutine[Any, Any, None]]) -> None:
        """Start these coroutines as tasks: one wake-up of the event loop for all of them."""
        self.loop.call_soon_threadsafe(self._spawn, coros)

    def _spawn(self, coros: list[Coroutine[Any, Any, None]]) -> None:
        for coro in coros:
            task = self.loop.create_task(coro)
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def call(self, fn: Callable[[Any], None], arg: Any) -> None:
        """Run fn(arg) on the event loop's thread, soon (safe from any thread)."""
        self.loop.call_soon_threadsafe(fn, arg)

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=1.0)
