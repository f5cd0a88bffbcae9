"""drain: run the handlers on the jobs of a test's database, in the test's thread, through
the real claim and settle, until no job of their topics is ready.

Nothing is modelled here: brooq.claim picks each job (priority, groups, flow limits,
parents), the worker's own settler writes each outcome (brooq.settle_many, the chained
jobs in the settle's transaction), so retries, backoff, dead jobs and a workflow's
children come out as in production. What differs is the schedule only: one job at a
time, in the caller's thread, on the caller's connection and in its transaction.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, NamedTuple

import psycopg
from psycopg import pq

from brooq import queries
from brooq.attempt import Attempt, TopicHandler
from brooq.config import WorkerConfig, format_duration
from brooq.counters import Counters
from brooq.errors import WORKER, BrooqError, translate, who
from brooq.job import Job
from brooq.messages import _
from brooq.outcome import Outcome, of_exception, of_return
from brooq.payload import PayloadLoader, Undecodable
from brooq.producer import topic_stats
from brooq.rows import fields_row
from brooq.runner import log_failed_attempt
from brooq.session import declare
from brooq.settings import TopicSettings
from brooq.settler import Settler
from brooq.snapshot import TopicSnapshot
from brooq.states import CLAIMABLE
from brooq.tasks import Registry, Task
from brooq.typed import with_payload
from brooq.worker import Worker

log = logging.getLogger("brooq.testing")

Conn = psycopg.Connection[Any]
Handlers = Worker | Task[Any] | Registry | Mapping[str, Callable[..., Any]]

UNUSED_DSN = "postgresql:///brooq-testing"  # the scratch worker of a Task or a Registry: never connects
WORKER_NAME = "brooq.testing"  # brooq.claim's worker: what locked_by shows while a handler runs
DEFAULT_LEASE = timedelta(seconds=30)  # brooq.claim's default, for handlers given as a mapping
DEFAULT_MAX_JOBS = 1000


class DrainedAttempt(NamedTuple):
    """One attempt drain ran: the job, its attempt number, what the handler asked for
    (an outcome of brooq.settle_many: done, failed, delay, preserve, cancel, dead), the
    state the database gave the job (None: nothing was written, the lease was lost),
    and the error the attempt recorded."""

    job_id: int
    topic: str
    attempt: int
    outcome: str
    state: str | None
    error: str | None


@dataclass(frozen=True)
class Drained:
    """What drain ran. ``topics``: each drained topic's counts, as a worker counts them
    (brooq.TopicSnapshot: done, failed — to be retried —, retried, dead, canceled);
    ``attempts``: every attempt in the order it ran; ``left``: per topic, the jobs not
    finished when drain stopped (scheduled for later, waiting for parents or a retry,
    held by a flow limit or a paused topic), from brooq.topic_stats."""

    topics: Mapping[str, TopicSnapshot]
    attempts: tuple[DrainedAttempt, ...] = ()
    left: Mapping[str, int] = field(default_factory=dict)

    def _sum(self, name: str) -> int:
        return sum(int(getattr(t, name)) for t in self.topics.values())

    @property
    def done(self) -> int:
        return self._sum("done")

    @property
    def failed(self) -> int:
        """Attempts that failed and will be retried (after the topic's backoff)."""
        return self._sum("failed")

    @property
    def retried(self) -> int:
        """Attempts settled with Retry(delay) or PreserveAttempt."""
        return self._sum("retried")

    @property
    def dead(self) -> int:
        return self._sum("dead")

    @property
    def canceled(self) -> int:
        return self._sum("canceled")

    def __str__(self) -> str:
        parts = []
        for topic, t in self.topics.items():
            counts = [f"{getattr(t, name)} {name}" for name in
                      ("done", "failed", "retried", "dead", "canceled", "lease_lost")
                      if getattr(t, name)]
            parts.append(f"{topic}: {', '.join(counts) or 'nothing run'}")
        text = f"{len(self.attempts)} attempts ({'; '.join(parts)})"
        left = [f"{topic} {n}" for topic, n in self.left.items() if n]
        return f"{text}; not finished: {', '.join(left)}" if left else text


class DrainLimit(BrooqError):
    """drain ran ``max_jobs`` attempts and jobs were still ready: a handler that enqueues
    a job for every job it runs, or a job retried without end. ``.drained`` is what ran."""

    def __init__(self, message: str, drained: Drained) -> None:
        super().__init__(message)
        self.drained = drained


def topic_handlers(handlers: Handlers) -> dict[str, TopicHandler]:
    """The handlers by topic: a brooq.Worker's registered ones (with the topic settings
    and timeout given to @worker.handler), a brooq.Task's or a brooq.Registry's tasks (as
    worker.register registers them), or a mapping of topic to handler function (default
    topic settings, no timeout)."""
    if isinstance(handlers, Worker):
        return dict(handlers.handlers)
    if isinstance(handlers, (Task, Registry)):
        scratch = Worker.from_config(WorkerConfig(dsn=UNUSED_DSN))  # the environment unread
        scratch.register(handlers)
        return dict(scratch.handlers)
    if isinstance(handlers, Mapping):
        found: dict[str, TopicHandler] = {}
        for topic, fn in handlers.items():
            if not isinstance(topic, str) or not callable(fn):
                raise TypeError(f"handlers: a mapping of topic name to handler function, not "
                                f"{topic!r}: {fn!r}"[:200])
            found[topic] = TopicHandler(topic, with_payload(fn), inspect.iscoroutinefunction(fn),
                                        None, TopicSettings())
        return found
    raise TypeError(f"handlers: a brooq.Worker, a brooq.Task, a brooq.Registry or a mapping of "
                    f"topic name to handler function, not {type(handlers).__name__}")


def declare_topics(conn: Conn, handlers: Handlers) -> list[str]:
    """Declare the handlers' topics on ``conn`` (in its transaction), each with the
    settings its handler registered, as a worker with brooq_admin does when it starts:
    what a test does before the code it tests enqueues. A brooq.Registry declares what
    ``brooq declare --app`` declares: its topics (those without a task too) and its
    schedules (Registry.declare). Returns the topics' names."""
    if isinstance(handlers, Registry):
        handlers.declare(conn)
        return list(handlers.topics())
    found = topic_handlers(handlers)
    for h in found.values():
        declare(conn, h)
    return list(found)


def drain(conn: Conn, handlers: Handlers, topics: str | Iterable[str] | None = None, *,
          scheduled: bool = False, max_jobs: int = DEFAULT_MAX_JOBS,
          lease: timedelta | None = None) -> Drained:
    """Run ``handlers`` (a brooq.Worker, a brooq.Task or brooq.Registry, or a mapping of
    topic to handler function) on the jobs of ``topics`` (default: every topic they
    handle) in this thread, on ``conn`` and in its transaction, until brooq.claim gives no
    job of those topics; one job at a time, each claimed and settled by the real SQL. Jobs
    their handlers enqueue (on ``conn``, or with ``job.chain``) are run too.

    ``scheduled``: also run the jobs that are not ready yet (enqueued with ``at`` or
    ``delay``, or failed and waiting out their backoff): when nothing is ready, brooq's
    clock (the setting brooq.now, which only a superuser may set) moves forward to the
    next such job, each retry's backoff counted as in production; the clock is given
    back at the end. ``max_jobs``: at most that many attempts, else DrainLimit (the job
    claimed past the limit is given back, its attempt not counted). ``lease``: the
    claim's lease (default: the worker's; 30s for a mapping).

    A sync handler runs to its end (nothing can stop it in this thread): past its
    timeout its answer is ignored and the attempt fails, as the worker would settle it.
    An async one runs with asyncio.run(), bounded by its timeout. Each attempt runs in a
    savepoint when ``conn`` is in a transaction: a handler that raises leaves none of its
    writes on ``conn``, and the transaction usable. Returns a Drained summary."""
    if not isinstance(conn, psycopg.Connection):
        raise TypeError(f"drain takes a psycopg.Connection (the test's), not {type(conn).__name__}"
                        " (an AsyncConnection: drain runs sync; open a sync connection to drain)")
    found = topic_handlers(handlers)
    names = _topics(found, topics)
    if not isinstance(max_jobs, int) or max_jobs < 1:
        raise ValueError(f"max_jobs: a positive integer, not {max_jobs!r}")
    if lease is None:
        lease = handlers.config.lease if isinstance(handlers, Worker) else DEFAULT_LEASE
    counters = Counters()
    for topic in names:
        counters.add_topic(topic)
    settler = Settler(WORKER_NAME, counters, release=lambda att: None)
    attempts: list[DrainedAttempt] = []

    def summary() -> Drained:
        return Drained({t: c.snapshot() for t, c in counters.topics.items()}, tuple(attempts),
                       _left(conn, names))

    with _clock(conn, scheduled) as clock:
        while True:
            jobs = _claim(conn, names, lease)
            if not jobs:
                if clock is not None and clock.forward(names):
                    continue
                break
            (job,) = jobs
            att = Attempt(job, found[job.topic])
            if len(attempts) >= max_jobs:
                uncounted = Counters()
                uncounted.add_topic(job.topic)
                given_back = Settler(WORKER_NAME, uncounted, release=lambda att: None)
                _settle(conn, given_back, att, Outcome("preserve", None, timedelta(0)))
                drained = summary()
                raise DrainLimit(
                    f"drain ran max_jobs={max_jobs} attempts and jobs of {', '.join(names)} are "
                    f"still ready (job {job.id} of {job.topic} was next): a handler that enqueues "
                    f"a job for every job it runs, or a job retried without end? ran {drained}; "
                    "pass a larger max_jobs if so many are expected", drained)
            counters.topics[job.topic].claimed += 1
            state, written = _settle(conn, settler, att, _run(conn, att))
            attempts.append(DrainedAttempt(job.id, job.topic, job.attempt, written.outcome, state,
                                           written.error))
    return summary()


def _topics(found: Mapping[str, TopicHandler], topics: str | Iterable[str] | None) -> list[str]:
    if not found:
        raise ValueError("drain: no handlers (register them with @worker.handler(topic))")
    if topics is None:
        return list(found)
    names = [topics] if isinstance(topics, str) else list(topics)
    if not names:
        raise ValueError("drain: topics is empty; None drains every topic of the handlers")
    for name in names:
        if name not in found:
            raise ValueError(f"drain: no handler for topic {name!r}; the handlers' topics: "
                             f"{', '.join(found)}")
    return names


def _claim(conn: Conn, names: list[str], lease: timedelta) -> list[Job]:
    cur = conn.cursor(row_factory=fields_row(Job))
    cur.adapters.register_loader("jsonb", PayloadLoader)  # as on the worker's connection
    try:
        return cur.execute(queries.CLAIM, [WORKER_NAME, names, 1, lease]).fetchall()
    except psycopg.Error as exc:
        error = translate(exc, WORKER, who(conn))
        if error is None:
            raise
        if exc.sqlstate == "42704":
            raise type(error)(f"{error}; declare the topics first, in the test: "
                              "brooq.testing.declare_topics(conn, worker)", sqlstate=exc.sqlstate,
                              hint=error.hint, reason=error.reason) from exc
        raise error from exc


def _run(conn: Conn, att: Attempt) -> Outcome:
    """The attempt's outcome: its handler run in this thread (in a savepoint of the
    caller's transaction, if there is one), or the outcome the worker gives without
    running it."""
    job = att.job
    if type(job.payload) is Undecodable:
        return Outcome("dead", f"payload cannot be decoded: {job.payload.cause}")
    if job.execution_left is not None and job.execution_left <= timedelta(0):
        return Outcome("failed", "max_execution exceeded: the job's time since its first claim "
                                 "ran out before this attempt started; the handler was not run")
    handler = att.handler
    started = time.monotonic()
    try:
        with _savepoint(conn):
            value = _run_async(handler, job) if handler.is_async else handler.fn(job)
            outcome = of_return(value)
    except _TimedOut:
        return _timed_out(att)
    except Exception as exc:  # noqa: BLE001 (the handler's failure is the job's, as in the worker)
        return _failed(job, exc)
    if handler.timeout is not None and time.monotonic() - started > handler.timeout.total_seconds():
        return _timed_out(att)  # the worker would have settled it failed at its timeout
    return outcome


class _TimedOut(Exception):
    pass


def _timed_out(att: Attempt) -> Outcome:
    timeout = att.handler.timeout
    assert timeout is not None
    error = f"timed out after {format_duration(timeout)}"
    job = att.job
    log.warning(_("job.attempt_stopped", id=job.id, topic=job.topic, attempt=job.attempt,
                  max_attempts=job.max_attempts, error=error))
    return Outcome("failed", error)


def _run_async(handler: TopicHandler, job: Job) -> Any:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise RuntimeError(f"drain runs the async handler of {handler.topic!r} with asyncio.run(), "
                           "and this thread runs an event loop already (an async test): call "
                           "drain from a sync test, or in a thread (asyncio.to_thread)")

    async def attempt() -> Any:
        if handler.timeout is None:
            return await handler.fn(job)
        try:
            return await asyncio.wait_for(handler.fn(job), handler.timeout.total_seconds())
        except TimeoutError:
            job.canceled.set("timeout")
            raise _TimedOut() from None

    return asyncio.run(attempt())


def _failed(job: Job, exc: Exception) -> Outcome:
    """The outcome of a handler's exception, logged as the worker logs it (an error with
    its stack, a signal such as Retry at INFO)."""
    outcome = of_exception(exc)
    if outcome.outcome == "failed":
        log_failed_attempt(log, job, outcome, exc)
    return outcome


def _settle(conn: Conn, settler: Settler, att: Attempt,
            outcome: Outcome) -> tuple[str | None, Outcome]:
    """Write the attempt's outcome as the worker's settling thread does: the job's new
    state, and the outcome written (a failure, when the database refused the handler's)."""
    settler.add(att, outcome, att.job.chained if outcome.outcome == "done" else None)
    batch = settler.take()
    states: dict[int, str | None] = {}
    settler.write(conn, batch, states)
    settler.settled(batch, states)
    return states.get(att.job.id), batch[0].outcome


def _in_transaction(conn: Conn) -> bool:
    return conn.info.transaction_status == pq.TransactionStatus.INTRANS


@contextmanager
def _savepoint(conn: Conn) -> Iterator[None]:
    if _in_transaction(conn):
        with conn.transaction():
            yield
    else:
        yield


def _left(conn: Conn, names: list[str]) -> dict[str, int]:
    """Per topic, the jobs not finished: pending, failed, processing or waiting."""
    return {s.topic: s.pending + s.failed + s.processing + s.waiting
            for s in topic_stats(conn) if s.topic in names}


class _Clock:
    """brooq's clock in this session, moved forward by drain(scheduled=True)."""

    def __init__(self, conn: Conn) -> None:
        self.conn = conn
        row = conn.execute(queries.TESTING_SUPERUSER).fetchone()
        if not (row and row[0]):
            raise BrooqError(
                f"drain(scheduled=True) moves brooq's clock (the setting brooq.now), which only a "
                f"superuser's session may do, and role {who(conn)!r} is not one: drain on a "
                "superuser's connection (the pytest plugin's brooq_conn is one), or without scheduled")
        before = conn.execute(queries.TESTING_CLOCK).fetchone()
        self.before = str(before[0]) if before and before[0] else ""
        self.local = not conn.autocommit  # in a transaction: set local, gone at its end anyway

    def forward(self, names: list[str]) -> bool:
        """Move the clock to the next instant a claimable job of ``names`` becomes ready;
        False when there is none."""
        row = self.conn.execute(queries.TESTING_NEXT_AVAILABLE, [names, list(CLAIMABLE)]).fetchone()
        at: datetime | None = row[0] if row else None
        if at is None:
            return False
        self.conn.execute(queries.TESTING_SET_CLOCK, [at.isoformat(), self.local])
        return True

    def restore(self) -> None:
        self.conn.execute(queries.TESTING_SET_CLOCK, [self.before, self.local])


@contextmanager
def _clock(conn: Conn, scheduled: bool) -> Iterator[_Clock | None]:
    if not scheduled:
        yield None
        return
    clock = _Clock(conn)
    try:
        yield clock
    finally:
        if conn.info.transaction_status in (pq.TransactionStatus.IDLE, pq.TransactionStatus.INTRANS):
            clock.restore()
