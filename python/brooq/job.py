"""What a handler receives: the job, its cancellation signal, and a way to chain jobs."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from brooq.otel import current_context
from brooq.rows import ParentState, parent_states

_LOCK = threading.Lock()  # guards every Canceled (set, callbacks, the lazily made event)


class Canceled:
    """A threading.Event-like flag set when the handler should stop.

    The worker sets it when the job's lease is lost (canceled, reaped), when the
    attempt times out, when the job's max_execution runs out, or when a shutdown
    gives up waiting. ``reason`` says which ("lease lost", "timeout",
    "max_execution", "shutdown").
    (Most jobs are never canceled nor waited on: the Event is made on first wait.)
    """

    __slots__ = ("_callbacks", "_event", "_set", "reason")

    def __init__(self) -> None:
        self._set = False
        self._event: threading.Event | None = None
        self._callbacks: list[Callable[[], None]] | None = None
        self.reason: str | None = None

    def is_set(self) -> bool:
        return self._set

    def wait(self, timeout: float | None = None) -> bool:
        """Block until set (True) or until ``timeout`` seconds passed (False)."""
        event = self._event
        if event is None:
            with _LOCK:
                if self._set:
                    return True
                if self._event is None:
                    self._event = threading.Event()
                event = self._event
        return event.wait(timeout)

    def __bool__(self) -> bool:
        return self._set

    def set(self, reason: str) -> None:
        """Set the flag (the worker does this; the first reason wins)."""
        with _LOCK:
            if self._set:
                return
            self.reason = reason
            self._set = True
            event = self._event
            callbacks, self._callbacks = self._callbacks, None
        if event is not None:
            event.set()
        for callback in callbacks or ():
            callback()

    def _on_set(self, callback: Callable[[], None]) -> None:
        with _LOCK:
            if not self._set:
                if self._callbacks is None:
                    self._callbacks = []
                self._callbacks.append(callback)
                return
        callback()

    async def wait_async(self) -> None:
        """Wait on the running event loop until set."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()

        def wake() -> None:
            def resolve() -> None:
                if not future.done():
                    future.set_result(None)
            loop.call_soon_threadsafe(resolve)

        self._on_set(wake)
        await future


@dataclass(frozen=True)
class Chained:
    """A job to enqueue when the current one is settled as done."""

    topic: str
    payload: Any
    key: str | None = None
    delay: timedelta | None = None
    priority: int = 0
    group: str | None = None  # an ordered group (brooq.enqueue's group)
    trace_context: dict[str, str] | None = None  # the attempt's span, when tracing is on


class Job:
    """A claimed job, as handed to a handler."""

    __slots__ = (
        "_canceled",
        "attempt",
        "chained",
        "created_at",
        "execution_deadline",
        "execution_left",
        "id",
        "lease_token",
        "max_attempts",
        "parents",
        "payload",
        "priority",
        "reported",
        "reported_sent",
        "topic",
        "trace_context",
    )

    def __init__(self, id: int, topic: str, payload: Any, attempt: int, max_attempts: int,
                 priority: int, lease_token: int, created_at: datetime,
                 execution_deadline: datetime | None = None,
                 execution_left: timedelta | None = None,
                 trace_context: dict[str, str] | None = None,
                 parents: list[dict[str, Any]] | None = None) -> None:
        self.id = id
        self.topic = topic
        self.payload = payload
        self.attempt = attempt  # this claim's number, 1 for the first
        self.max_attempts = max_attempts
        self.priority = priority
        self.lease_token = lease_token
        self.created_at = created_at
        # the topic's max_execution for this job (None: no limit): when it runs out (the
        # database's clock), and the time that was left at the claim
        self.execution_deadline = execution_deadline
        self.execution_left = execution_left
        # the W3C trace context it was enqueued under (brooq.tracing), None: none
        self.trace_context = trace_context
        # workflows: the parents' ids, topics and states as the claim read them, by id
        # (empty: no parents); their results are read on request (brooq.parents)
        self.parents: tuple[ParentState, ...] = () if parents is None else parent_states(parents)
        # Made when first asked for: most jobs are never canceled nor chain anything, and
        # two objects fewer per job is ~10% of a no-op job's cost in the worker.
        self._canceled: Canceled | None = None
        self.chained: list[Chained] | None = None  # the worker's business (see chain())
        self.reported: dict[str, Any] | None = None  # what progress() said last
        self.reported_sent: dict[str, Any] | None = None  # what the last heartbeat carried

    @property
    def canceled(self) -> Canceled:
        """Set when the handler should stop (see Canceled)."""
        canceled = self._canceled
        if canceled is None:
            with _LOCK:  # the handler's thread and the worker's loop may both ask first
                if self._canceled is None:
                    self._canceled = Canceled()
                canceled = self._canceled
        return canceled

    def is_canceled(self) -> bool:
        """``canceled.is_set()``, without making the flag when it was never set."""
        canceled = self._canceled
        return canceled is not None and canceled.is_set()

    @property
    def last_attempt(self) -> bool:
        """True when a failure now makes the job dead."""
        return self.attempt >= self.max_attempts

    def chain(self, topic: str, payload: Any, *, key: str | None = None,
              delay: timedelta | None = None, priority: int = 0, group: str | None = None) -> None:
        """Enqueue a job in the same transaction that settles this one as done
        (``group``: its ordered group, as in brooq.enqueue).

        Nothing is enqueued when this attempt fails, retries, is canceled or loses
        its lease. With tracing on (brooq.tracing), the chained job carries this
        attempt's trace context: its attempts join the same trace.
        """
        if self.chained is None:
            self.chained = []
        self.chained.append(Chained(topic, payload, key, delay, priority, group,
                                    current_context()))

    def progress(self, fraction: float | None = None, message: str | None = None) -> None:
        """Say how far the handler got: a fraction from 0 to 1, a short message, or both.

        It reaches the database with the next heartbeat (every lease/3), at no cost of
        its own: `brooq job ID`, brooq.jobs and brooq.in_flight show it.
        """
        if fraction is not None and not 0.0 <= fraction <= 1.0:
            raise ValueError(f"progress fraction {fraction!r} is not between 0 and 1")
        report: dict[str, Any] = {}
        if fraction is not None:
            report["fraction"] = float(fraction)
        if message is not None:
            report["message"] = str(message)[:200]
        self.reported = report  # one assignment: the loop reads it without a lock

    async def wait_canceled(self) -> None:
        """For async handlers: return once ``canceled`` is set."""
        await self.canceled.wait_async()

    def __repr__(self) -> str:
        return f"<Job {self.id} topic={self.topic} attempt={self.attempt}/{self.max_attempts}>"
