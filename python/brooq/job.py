"""What a handler receives: the job, its cancellation signal, a way to chain jobs, and its
durable steps (step, sleep, wait_for_event: brooq.durable)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, TypeVar

from brooq.otel import current_context
from brooq.payload import to_json
from brooq.rows import ParentState, parent_states

if TYPE_CHECKING:
    from brooq.durable import Step, StepStore

T = TypeVar("T")

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


class Suspended(BaseException):
    """Raised by ``job.sleep`` and ``job.wait_for_event`` when the job must wait: the
    database has ended the attempt already (the job is pending until then, its attempt
    given back, its lease released), and the handler unwinds. A BaseException, so that
    ``except Exception`` does not stop it; let it through."""

    def __init__(self, until: datetime, reason: str) -> None:
        self.until = until
        self.reason = reason
        super().__init__(f"{reason}: the job runs again at {until.isoformat()}")


class EventTimeout(TimeoutError):
    """``job.wait_for_event`` gave up: no event of the name came before its timeout. A
    stored step: the handler, run again, gets it again at once."""

    def __init__(self, event: str, step: str) -> None:
        self.event = event
        self.step = step
        super().__init__(f"no event {event!r} came before the timeout of the wait {step!r}")


class StepLeaseLost(Exception):
    """A durable step's write was fenced off: this attempt no longer holds the job (it was
    canceled, reaped or claimed again). Nothing was stored; stop, the outcome is ignored."""


class StepsUnavailable(RuntimeError):
    """job.step, sleep and wait_for_event need the worker that claimed the job (its
    connections); a Job made by hand has none."""


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
        "_counts",
        "_steps",
        "_store",
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
        "suspending",
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
        # durable steps (brooq.durable): the worker's store, set when claimed; the finished
        # steps, read on the first step call (None: not yet); calls per kind for their
        # default names; set while a sleep or wait may end the attempt (the leases then
        # leave its lease to the database's answer)
        self._store: StepStore | None = None
        self._steps: dict[str, Step] | None = None
        self._counts: dict[str, int] | None = None
        self.suspending = False

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

    # --- durable steps (docs/python-guide.md, "Durable steps") -------------------------

    def _finished(self) -> dict[str, Step]:
        store = self._store
        if store is None:
            raise StepsUnavailable("durable steps need the worker that claimed the job")
        if self._steps is None:
            self._steps = {s.name: s for s in store.steps(self) if s.kind != "waiting"}
        return self._steps

    def _default_name(self, kind: str) -> str:
        if self._counts is None:
            self._counts = {}
        n = self._counts[kind] = self._counts.get(kind, 0) + 1
        return f"{kind}#{n}"

    def step(self, name: str, fn: Callable[[], T]) -> T:
        """Run ``fn`` once for this job: its result (JSON, as a job's result) is stored
        with the job when it returns, by this attempt only while it holds the job; a
        later attempt (a retry, after a lease loss, after a sleep or a wait) returns the
        stored result without running ``fn`` (JSON-decoded: a dataclass comes back as a
        dict). ``fn`` may run again only when it ran and its result was not stored (the
        worker died, the database was unreachable): make its side effect idempotent.
        StepLeaseLost when the job is no longer this attempt's (nothing stored)."""
        done = self._finished().get(name)
        if done is not None and done.kind == "step":
            return done.result  # type: ignore[no-any-return]
        value = fn()
        return self._checkpoint(name, value)

    async def step_async(self, name: str, fn: Callable[[], Awaitable[T]]) -> T:
        """``step`` for async handlers: ``fn`` returns an awaitable; the database calls run
        on a thread, not on the event loop."""
        done = (await asyncio.to_thread(self._finished)).get(name)
        if done is not None and done.kind == "step":
            return done.result  # type: ignore[no-any-return]
        value = await fn()
        return await asyncio.to_thread(self._checkpoint, name, value)

    def _checkpoint(self, name: str, value: T) -> T:
        assert self._store is not None and self._steps is not None
        stored = self._store.checkpoint(self, name, to_json(value))
        if stored is None:
            raise StepLeaseLost(f"job {self.id}: the step {name!r} was not stored: the job is no longer this attempt's")
        if not stored.created:  # stored first by an earlier holder: its result wins
            return stored.result  # type: ignore[no-any-return]
        return value

    def sleep(self, until: datetime | None = None, *, for_: timedelta | float | None = None,
              step: str | None = None) -> None:
        """Sleep durably until ``until`` (an aware datetime) or for ``for_`` (a timedelta or
        seconds) from the first call: the attempt ends without being spent, no worker
        holds the job meanwhile, and the handler runs again from the top at the end,
        where this call returns at once (its end is a stored step: ``step``, by default
        ``sleep#n`` for the n-th sleep of a run). Raises Suspended to end the attempt: let
        it through."""
        if (until is None) == (for_ is None):
            raise ValueError("give until or for_, exactly one")
        duration = None if for_ is None else (for_ if isinstance(for_, timedelta) else timedelta(seconds=float(for_)))
        name = step if step is not None else self._default_name("sleep")
        self._suspend_call(lambda store: store.sleep(self, name, until, duration), name)

    def wait_for_event(self, event: str, *, timeout: timedelta | float, step: str | None = None) -> Any:
        """Wait for the event ``event`` (brooq.emit_event, from any producer) at most
        ``timeout`` from the first call, and return its payload. If an event of the name
        was emitted and is still kept (it may be older than the wait) and this job has
        not received it, it is received at once. Else the attempt ends without being
        spent (Suspended: let it through), no worker holds the job, and an emit of the
        name runs it again, from the top, where this call returns the payload at once (a
        stored step: ``step``, by default ``wait#n`` for the n-th wait of a run).
        EventTimeout once the timeout has passed with no event (stored too)."""
        wait = timeout if isinstance(timeout, timedelta) else timedelta(seconds=float(timeout))
        name = step if step is not None else self._default_name("wait")
        done = self._finished().get(name)
        if done is not None and done.kind == "event":
            return done.result
        if done is not None and done.kind == "timeout":
            raise EventTimeout(event, name)
        answer = self._suspend_call(lambda store: store.wait_for_event(self, name, event, wait), name)
        if answer.outcome == "timeout":
            raise EventTimeout(event, name)
        return answer.payload

    def _suspend_call(self, call: Callable[[StepStore], Any], name: str) -> Any:
        self._finished()
        assert self._store is not None
        self.suspending = True
        try:
            answer = call(self._store)
        except BaseException:
            self.suspending = False
            raise
        if answer is None:
            self.suspending = False
            raise StepLeaseLost(f"job {self.id}: {name!r} was not stored: the job is no longer this attempt's")
        until = answer.until
        if getattr(answer, "state", None) == "pending" or getattr(answer, "outcome", None) == "waiting":
            raise Suspended(until, f"job {self.id} suspended at {name!r}")  # suspending stays set
        self.suspending = False
        return answer

    async def sleep_async(self, until: datetime | None = None, *, for_: timedelta | float | None = None,
                          step: str | None = None) -> None:
        """``sleep`` for async handlers (the database call on a thread)."""
        await asyncio.to_thread(self.sleep, until, for_=for_, step=step)

    async def wait_for_event_async(self, event: str, *, timeout: timedelta | float,
                                   step: str | None = None) -> Any:
        """``wait_for_event`` for async handlers (the database calls on a thread)."""
        return await asyncio.to_thread(self.wait_for_event, event, timeout=timeout, step=step)

    async def wait_canceled(self) -> None:
        """For async handlers: return once ``canceled`` is set."""
        await self.canceled.wait_async()

    def __repr__(self) -> str:
        return f"<Job {self.id} topic={self.topic} attempt={self.attempt}/{self.max_attempts}>"
