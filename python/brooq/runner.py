"""The runner: runs the handlers of claimed jobs and turns what they do into outcomes.

The loop (worker.py) claims; the runner takes the claimed jobs: it makes an Attempt of
each, has the leases hold it, and starts its handler: on a pool thread (sync handlers;
a prefetched job waits there, leased, for a free thread) or on the event loop (async
handlers). A handler's return or exception becomes an Outcome, which the loop's next
turn hands to the settler's outbox (``collect``). The runner also stops attempts: at
their timeout, when the job's max_execution runs out, when the lease is lost, at
shutdown; and it reports a handler that goes on long after it was told to stop (hung).

One object per run of the worker, driven by the loop's thread; pool threads and the
event loop only start attempts (under the lock) and hand back outcomes. It opens no
connection: a prefetched job's lease is confirmed through the leases, on the loop's
connection.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from datetime import timedelta
from typing import Any

import psycopg

from brooq import tracing
from brooq.attempt import QUEUED, SKIPPED, STARTED, Attempt, TopicHandler
from brooq.config import format_duration
from brooq.counters import Counters
from brooq.executors import EventLoop, ThreadPool
from brooq.job import Job
from brooq.leases import Leases
from brooq.messages import _, _n
from brooq.outcome import Outcome, of_exception, of_return
from brooq.payload import Undecodable
from brooq.settler import Settler, log_extra
from brooq.signals import find_signal

log = logging.getLogger("brooq.worker")

CHECK_EVERY = 0.1  # seconds between scans for timeouts and hung handlers
# An attempt is stopped this long before the job's max_execution deadline (at most a
# tenth of the time left): the deadline ends the lease, and the worker's own settle,
# which names the cause, must reach the database before a heartbeat or a reap sees
# the lease end.
EXECUTION_MARGIN = 2 * CHECK_EVERY
# A prefetched job starts only on a lease confirmed this recently (its claim, or a
# heartbeat that kept it); an older one is checked first, in one heartbeat for all
# such jobs. This bounds how long after a cancel (or a reap) a handler may start.
START_CONFIRM = 0.1  # seconds



def log_failed_attempt(logger: logging.Logger, job: Job, outcome: Outcome, exc: BaseException) -> None:
    """A failed attempt (outcome failed), as the worker logs it: a signal such as Retry
    at INFO, any other error at ERROR with its stack."""
    if find_signal(exc) is not None:
        logger.info(_("job.attempt_error", id=job.id, topic=job.topic, attempt=job.attempt,
                      max_attempts=job.max_attempts, error=outcome.error),
                    extra=log_extra(job, "retry"))
    else:
        logger.error(_("job.attempt_failed", id=job.id, topic=job.topic, attempt=job.attempt,
                       max_attempts=job.max_attempts, error=outcome.error), exc_info=exc,
                     extra=log_extra(job, "failed"))

class Runner:
    """The attempts of one run, from claim until their outcome goes to the outbox."""

    def __init__(self, worker: str, handlers: Mapping[str, TopicHandler], counts: Counters,
                 leases: Leases, outbox: Settler, wake: Callable[[], None],
                 hung_grace: timedelta) -> None:
        self.worker = worker
        self._handlers = handlers  # the worker's registration, read only
        self._counts = counts
        self._leases = leases
        self._outbox = outbox
        self._wake = wake  # the loop's Waker.wake: an outcome or a lease to confirm is waiting
        self._hung_grace = hung_grace.total_seconds()
        # each topic's max_execution as the database holds it: set when the loop connects
        self.max_execution: dict[str, timedelta | None] = {}
        self._lock = threading.Lock()  # Attempt.phase and `queued`: a pool thread starts, the loop withdraws
        self._attempts: set[Attempt] = set()  # claimed, their outcome not yet collected
        self._finished: deque[tuple[Attempt, Outcome]] = deque()  # handlers' answers, for collect
        self._unconfirmed: deque[Attempt] = deque()  # prefetched, to confirm before they start
        self.queued = 0  # prefetched jobs no thread has started yet (under _lock)
        self._pool: ThreadPool | None = None
        self._event_loop: EventLoop | None = None

    def __len__(self) -> int:
        """The attempts held: running, and prefetched waiting for a thread."""
        return len(self._attempts)

    @property
    def unconfirmed(self) -> bool:
        """Prefetched jobs wait for their lease to be confirmed (see confirm_prefetched)."""
        return bool(self._unconfirmed)

    # --- executors ----------------------------------------------------------------

    def open(self, concurrency: int) -> None:
        """Start the pool threads (any sync handler) and the event loop (any async one)."""
        if any(not h.is_async for h in self._handlers.values()):
            self._pool = ThreadPool(concurrency, f"brooq-{self.worker}")
        if any(h.is_async for h in self._handlers.values()):
            self._event_loop = EventLoop(f"brooq-async-{self.worker}")

    def close(self, now: float) -> None:
        """The run ends: tell every running handler to stop, end the executors' threads
        (a busy one ends after its handler, never waited for)."""
        for att in list(self._attempts):
            self._cancel(att, "shutdown", now)
        if self._pool is not None:
            self._pool.stop()
        if self._event_loop is not None:
            self._event_loop.stop()
        for counts in self._counts.topics.values():
            counts.busy = 0

    def leave(self) -> None:
        """After a run: what a stop cut short and could not hand back (no answer from the
        database) is left to its lease; an old pool thread finds its queued attempts withdrawn, and a late
        outcome goes to this runner, which nobody collects any more."""
        with self._lock:
            for att in self._attempts:
                att.closed = True
                if att.phase == QUEUED:
                    att.phase = SKIPPED
            self.queued = 0

    # --- claimed jobs -------------------------------------------------------------

    def start(self, jobs: list[Job], now: float) -> None:
        """Take the jobs a claim gave (``now``: taken before the claim's round trip):
        async handlers start now, sync ones when a pool thread is free; a job no handler
        can take, or out of time already, is settled failed without running."""
        started = time.monotonic()
        coros: list[Coroutine[Any, Any, None]] = []
        queued: list[Attempt] = []  # sync: started by a pool thread when one is free
        for job in jobs:
            att = self._attempt(job, now)
            if type(job.payload) is Undecodable:
                # no handler can take it, no retry fix it
                self._attempts.discard(att)
                self._undecodable(att)
                continue
            if att.out_of_time(started):  # max_execution spent before this attempt: never run it
                self._attempts.discard(att)
                self._out_of_time(att, started, before=True)
                continue
            if att.handler.is_async:
                att.begin(started)
                coros.append(self.run_async(att))
            else:
                queued.append(att)
        if queued:
            with self._lock:
                self.queued += len(queued)
            assert self._pool is not None
            for att in queued:
                self._pool.submit(self.run_sync, att)
        if coros:
            assert self._event_loop is not None
            self._event_loop.spawn(coros)
        self.count_busy()

    def _attempt(self, job: Job, now: float) -> Attempt:
        """The attempt of a claimed job, held by the leases (begun when its handler starts)."""
        att = Attempt(job, self._handlers[job.topic])
        if job.execution_left is not None:  # from `now`, taken before the claim's round trip
            left = job.execution_left.total_seconds()
            att.execution_ends = now + left - min(EXECUTION_MARGIN, left / 10)
        self._leases.hold(att, now)
        self._attempts.add(att)
        self._counts.topics[job.topic].claimed += 1
        return att

    def confirm_prefetched(self, conn: psycopg.Connection[Any], now: float) -> None:
        """Prefetched jobs about to start on a lease not confirmed lately: one heartbeat of
        them says which are still ours (a canceled or reaped one is lost there), then
        they go back to the pool, where a lost one is skipped."""
        batch = list(self._unconfirmed)
        self._leases.heartbeat(conn, now, only=batch)
        for _unused in batch:
            att = self._unconfirmed.popleft()
            assert self._pool is not None
            self._pool.submit(self.run_sync, att)

    def count_busy(self) -> None:
        """Set each topic's busy gauge (Counters): its handlers started and not yet collected."""
        busy = dict.fromkeys(self._handlers, 0)
        for att in self._attempts:
            if att.phase == STARTED:
                busy[att.job.topic] += 1
        topics = self._counts.topics
        for topic, n in busy.items():
            topics[topic].busy = n

    # --- handlers -----------------------------------------------------------------

    def run_sync(self, att: Attempt) -> None:
        """On a pool thread: run a sync handler, unless its attempt is closed, canceled or
        out of lease by now; a lease not confirmed lately goes to the loop first."""
        with self._lock:
            if att.phase != QUEUED:
                return  # withdrawn by a graceful stop: handed back to the queue
            now = time.monotonic()
            if not (att.closed or att.job.is_canceled()) and now - att.confirmed > START_CONFIRM \
                    and now < att.expires:
                self._unconfirmed.append(att)  # the loop confirms its lease, then resubmits it
                self._wake()
                return
            self.queued -= 1
            if att.closed or att.job.is_canceled() or now >= att.expires:
                # lease lost, canceled, shutdown, or run out (by our clock) before it
                # started: never run (one whose lease is still ours is handed back)
                att.phase = SKIPPED
            else:
                att.begin(now)
        if att.phase == SKIPPED:
            self._finished.append((att, Outcome("failed")))  # ignored: the attempt is closed
            self._wake()
            return
        t0 = time.perf_counter()
        tracer = tracing.tracer()  # None unless the application set up OpenTelemetry
        if tracer is not None:
            outcome = tracing.attempt(tracer, att.job, att.handler.fn,
                                      lambda exc: self._failed(att, exc))
        else:
            try:
                outcome = of_return(att.handler.fn(att.job))
            except BaseException as exc:  # noqa: BLE001 (a handler never kills the worker)
                outcome = self._failed(att, exc)
        att.elapsed = time.perf_counter() - t0
        self._finished.append((att, outcome))
        self._wake()

    async def run_async(self, att: Attempt) -> None:
        """On the event loop: run an async handler."""
        t0 = time.perf_counter()
        att.task = asyncio.current_task()
        if att.cancel_requested and att.task is not None:
            att.task.cancel()  # told to stop before it started: CancelledError at its first await
        tracer = tracing.tracer()
        if tracer is not None:
            outcome = await tracing.attempt_async(tracer, att.job, att.handler.fn,
                                                  lambda exc: self._failed(att, exc))
        else:
            try:
                result: Awaitable[Any] = att.handler.fn(att.job)
                outcome = of_return(await result)
            except BaseException as exc:  # noqa: BLE001 (a handler never kills the worker)
                outcome = self._failed(att, exc)
        att.elapsed = time.perf_counter() - t0
        self._finished.append((att, outcome))
        self._wake()

    def _failed(self, att: Attempt, exc: BaseException) -> Outcome:
        """The outcome of a handler's exception. An error (not a signal such as Retry) is
        logged at ERROR with its stack: with no logging configured, Python prints it on
        stderr (logging.lastResort), so a failing handler is never silent."""
        outcome = of_exception(exc)
        job = att.job
        if outcome.outcome == "dead":
            # a payload that does not fit, or Dead: the settler logs job.dead at ERROR,
            # with the reason, once the database made it dead (no stack: nothing broke)
            return outcome
        if outcome.outcome == "failed" and not job.is_canceled():
            log_failed_attempt(log, job, outcome, exc)
        return outcome

    def collect(self, now: float) -> bool:
        """Take the handlers' outcomes into the settler's outbox (loop thread); whether
        any handler had finished."""
        if not self._finished:
            return False
        while self._finished:
            att, outcome = self._finished.popleft()
            if att not in self._attempts:
                continue  # an attempt no longer held: its answer is ignored
            self._attempts.discard(att)
            if att.phase != STARTED:  # never run: its lease was lost or ran out before it started
                if not att.closed and att.out_of_time(now):  # its max_execution ran out
                    self._out_of_time(att, now, before=True)
                elif not att.closed:  # ran out by our clock: hand it back if it is still ours
                    att.closed = True
                    self._outbox.add(att, Outcome("preserve", None, timedelta(0)))
                continue
            self._counts.topics[att.job.topic].observe(att.elapsed)
            if att.closed:
                if att.hung_reported:
                    log.warning(_("job.hung_returned", id=att.job.id, topic=att.job.topic,
                                  seconds=att.elapsed))
                continue  # timed out or lease lost: its answer is ignored
            att.closed = True
            self._outbox.add(att, outcome, att.job.chained if outcome.outcome == "done" else None)
        self.count_busy()
        return True

    # --- stopping attempts --------------------------------------------------------

    def lost(self, att: Attempt, now: float) -> None:
        """Leases' word that an attempt's lease is gone: drop its outcome, stop its handler."""
        self._outbox.drop(att)
        if att in self._attempts:
            log.info(_("job.lease_lost", id=att.job.id, topic=att.job.topic))
            self._cancel(att, "lease lost", now)

    def hand_back(self, now: float, error: str) -> int:
        """A stop whose grace ran out: the attempts still held go to the outbox settled
        'preserve' with no delay (ready again at once, the attempt given back, ``error``
        its last_error); their handlers' answers are ignored. How many were handed back."""
        count = 0
        for att in list(self._attempts):
            with self._lock:  # a pool thread starts no attempt closed under the lock
                if att.closed:
                    continue  # lost, or its outcome is in the outbox already
                before = att.phase != STARTED
                if att.phase == QUEUED:
                    att.phase = SKIPPED
                    self.queued -= 1
                att.closed = True
            if att.out_of_time(now):  # handed back, it would fail at its next claim anyway
                self._out_of_time(att, now, before=before)
                continue
            self._outbox.add(att, Outcome("preserve", error, timedelta(0)))
            count += 1
        return count

    def cancel_all(self, now: float) -> None:
        """Tell every running handler to stop (shutdown); their outcomes are not waited for."""
        for att in list(self._attempts):
            self._cancel(att, "shutdown", now)

    def _cancel(self, att: Attempt, reason: str, now: float) -> None:
        if att.canceled_at is None:
            att.canceled_at = now
        att.job.canceled.set(reason)
        if att.handler.is_async and self._event_loop is not None:
            self._event_loop.call(self._cancel_task, att)

    @staticmethod
    def _cancel_task(att: Attempt) -> None:
        """On the event loop's thread: cancel the attempt's task, or have it cancel itself."""
        att.cancel_requested = True
        if att.task is not None:
            att.task.cancel()

    def check(self, now: float) -> None:
        """Stop the attempts past their timeout or their job's max_execution; report a
        handler still running hung_grace after it was told to stop (every CHECK_EVERY)."""
        self.count_busy()  # a sync handler starts on a pool thread: seen here within CHECK_EVERY
        for att in list(self._attempts):
            if not att.closed and att.out_of_time(now):
                with self._lock:  # a pool thread starts no attempt closed under the lock
                    before = att.phase != STARTED
                    att.closed = True
                self._out_of_time(att, now, before=before)
            if not att.closed and att.deadline is not None and now >= att.deadline:
                att.closed = True
                self._cancel(att, "timeout", now)
                timeout = att.handler.timeout
                assert timeout is not None
                error = f"timed out after {format_duration(timeout)}"
                log.warning(_("job.attempt_stopped", id=att.job.id, topic=att.job.topic,
                              attempt=att.job.attempt, max_attempts=att.job.max_attempts,
                              error=error))
                self._outbox.add(att, Outcome("failed", error))
            if (att.canceled_at is not None and not att.hung_reported and att.phase == STARTED
                    and now - att.canceled_at >= self._hung_grace):
                att.hung_reported = True
                self._counts.topics[att.job.topic].hung += 1
                log.error(_("job.hung", id=att.job.id, topic=att.job.topic,
                            handler=getattr(att.handler.fn, "__qualname__", att.handler.fn),
                            seconds=now - att.canceled_at, reason=att.job.canceled.reason))

    def _undecodable(self, att: Attempt) -> None:
        """A payload Python cannot decode (brooq.payload.Undecodable): the job is dead at
        once, the cause in its last_error; the jobs claimed beside it run."""
        att.closed = True
        self._outbox.add(att, Outcome("dead", f"payload cannot be decoded: {att.job.payload.cause}"))

    def _out_of_time(self, att: Attempt, now: float, *, before: bool) -> None:
        """The job's max_execution ran out: stop its handler (if it runs) and settle the
        attempt failed, naming the cause. Never 'preserve': the next attempt would be out of
        time as well; the database makes the job dead only when its attempts are spent."""
        job = att.job
        att.closed = True  # a queued one is skipped by its thread; a running one's answer ignored
        if not before:
            self._cancel(att, "max_execution", now)
        limit = self.max_execution.get(job.topic)
        spent = f"max_execution {format_duration(limit)}" if limit is not None else "max_execution"
        deadline = "" if job.execution_deadline is None else f" at {job.execution_deadline.isoformat()}"
        if before:
            error = (f"{spent} exceeded: the job's time since its first claim ran out{deadline}, "
                     "before this attempt started; the handler was not run")
        else:
            error = (f"{spent} exceeded: the job's time since its first claim ran out{deadline}; "
                     "the attempt was stopped")
        log.warning(_("job.attempt_error", id=job.id, topic=job.topic, attempt=job.attempt,
                      max_attempts=job.max_attempts, error=error),
                    extra=log_extra(job, "failed"))
        self._outbox.add(att, Outcome("failed", error))

    def withdraw(self) -> None:
        """A graceful stop: hand back the prefetched jobs no thread has started, settled
        'preserve' with no delay: the attempt their claim charged is given back and they
        are ready again."""
        withdrawn: list[Attempt] = []
        with self._lock:
            for att in self._attempts:
                if att.phase == QUEUED and not att.handler.is_async:
                    att.phase = SKIPPED
                    withdrawn.append(att)
            self.queued -= len(withdrawn)
        now = time.monotonic()
        for att in withdrawn:
            self._attempts.discard(att)
            if att.closed:
                continue  # lease already lost: nothing to hand back
            if att.out_of_time(now):  # handed back, it would fail at its next claim anyway
                self._out_of_time(att, now, before=True)
                continue
            att.closed = True
            self._outbox.add(att, Outcome("preserve", None, timedelta(0)))
        if withdrawn:
            log.info(_n("worker.handing_back", len(withdrawn), worker=self.worker))
            self.count_busy()
