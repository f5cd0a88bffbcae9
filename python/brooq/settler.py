"""The settler: owns finished attempts until the database has their outcome.

Handlers' outcomes wait in the outbox; the settler writes them: the plain ones in one
brooq.settle_many, an attempt with chained jobs in a transaction of its own with those
jobs, and, when the database refuses a value of the batch, one by one, so one bad
result cannot hold back the others. It counts what the database answered: a NULL
state means the lease was lost and nothing was written.

Three steps, so that writing can run elsewhere: ``take`` (the loop's thread) hands the
outbox over, ``write`` (any thread, a connection) talks to the database and nothing
else, ``settled`` (the loop's thread) releases the leases and counts. ``settle`` does
all three on the caller's connection: a test drives it with a connection and attempts.
The worker writes on a thread and a connection of its own (SettleThread, below), so a
claim never waits behind a settle's commit, and the database settles one batch while
the loop claims the next.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import psycopg
from psycopg import pq
from psycopg.rows import scalar_row
from psycopg.types.json import Jsonb

from brooq import queries
from brooq.attempt import Attempt
from brooq.counters import Counters
from brooq.errors import FATAL_SQLSTATES, PRODUCER, WORKER, refused, translate, who
from brooq.job import Chained, Job
from brooq.messages import _
from brooq.outcome import Outcome, describe
from brooq.payload import to_json
from brooq.redact import one_line
from brooq.rows import fields_row

log = logging.getLogger("brooq.worker")


def log_extra(job: Job, event: str) -> dict[str, Any]:
    """Attributes of a log record about a job, for filters: record.brooq_job (the id),
    record.brooq_topic, record.brooq_event (failed, retry, dead)."""
    return {"brooq_job": job.id, "brooq_topic": job.topic, "brooq_event": event}

Conn = psycopg.Connection[Any]


class Settled(NamedTuple):
    """A row of brooq.settle_many: the job's new state, NULL when the lease was lost."""

    id: int
    state: str | None


class Pending:
    """An attempt's outcome waiting in the outbox (and, for done, the jobs it chained)."""

    __slots__ = ("attempt", "chained", "outcome")

    def __init__(self, attempt: Attempt, outcome: Outcome, chained: Sequence[Chained]) -> None:
        self.attempt = attempt
        self.outcome = outcome
        self.chained = chained


def _identity(text: Any) -> str:
    return str(text)


def _state(value: Any) -> str | None:
    """brooq.settle's answer: the new state, None when the lease was lost."""
    return None if value is None else str(value)


def _guarded(conn: Conn) -> contextlib.AbstractContextManager[Any]:
    """A savepoint around a statement the database may refuse, when it runs in a
    transaction of the caller's (brooq.testing.drain settles in the test's): a refusal
    then leaves that transaction usable for the fallback's statements. The worker's own
    connections run in autocommit, where each statement is a transaction of its own:
    nothing there, not a round trip more."""
    if conn.info.transaction_status == pq.TransactionStatus.INTRANS:
        return conn.transaction()
    return contextlib.nullcontext()


def answered(batch: list[Pending], states: dict[int, str | None]) -> tuple[list[Pending], list[Pending]]:
    """``batch`` split by Settler.write's ``states``: written, and still to write."""
    written: list[Pending] = []
    unwritten: list[Pending] = []
    for p in batch:
        (written if p.attempt.job.id in states else unwritten).append(p)
    return written, unwritten


class Settler:
    """The outbox of finished attempts, and how they reach brooq.settle_many."""

    def __init__(self, worker: str, counters: Counters, release: Callable[[Attempt], None]) -> None:
        self.worker = worker
        self._counters = counters.topics
        self._release = release  # the leases stop holding a settled attempt
        self._outbox: list[Pending] = []
        self._settled_rows = fields_row(Settled)

    def __len__(self) -> int:
        return len(self._outbox)

    def add(self, attempt: Attempt, outcome: Outcome, chained: list[Chained] | None = None) -> None:
        """Queue an attempt's outcome (and, for done, the jobs it chained). An attempt a
        durable sleep or wait ended (job.suspending) is settled already: the database gave
        its attempt back and released its lease (brooq.sleep, brooq.wait_for_event), so
        nothing is written; it is counted as preserve, whatever the handler did after."""
        if attempt.job.suspending:
            self._release(attempt)
            self._counters[attempt.job.topic].settled["preserve"] += 1
            return
        self._outbox.append(Pending(attempt, outcome, chained or ()))

    def drop(self, attempt: Attempt) -> None:
        """Forget the attempt's outcome: its lease is lost, nothing may be written for it."""
        self._outbox = [p for p in self._outbox if p.attempt is not attempt]

    # --- writing --------------------------------------------------------------------

    def take(self) -> list[Pending]:
        """Hand the outbox over for writing (its attempts are now ``settling``)."""
        batch, self._outbox = self._outbox, []
        for p in batch:
            p.attempt.settling = True
        return batch

    def write(self, conn: Conn, batch: list[Pending], states: dict[int, str | None]) -> None:
        """Write ``batch``'s outcomes; each job's answer goes into ``states`` as soon as it is
        committed (so after an error, the jobs without an answer are the ones to write
        again). Talks to the database only: no counting, no leases."""
        plain = [p for p in batch if not p.chained]
        if plain:
            try:
                with _guarded(conn):
                    rows = conn.cursor(row_factory=self._settled_rows).execute(
                        queries.SETTLE_MANY, self._settle_many_args(plain)).fetchall()
            except psycopg.Error as exc:  # a value the database refused: settle one by one
                if not refused(exc) or exc.sqlstate in FATAL_SQLSTATES:
                    raise
                log.warning(_("worker.settle_many_failed", worker=self.worker, error=exc))
                for p in plain:
                    states[p.attempt.job.id] = self._settle_one(conn, p)
            else:
                answered = dict(rows)
                for p in plain:
                    states[p.attempt.job.id] = answered.get(p.attempt.job.id)
        for p in batch:
            if p.chained:
                states[p.attempt.job.id] = self._settle_with_chained(conn, p)

    def _settle_many_args(self, batch: list[Pending]) -> list[Any]:
        # ids, lease tokens (ints) and outcomes (words of OUTCOMES: nothing to quote) go
        # as array literals: psycopg's list dumper costs ~1 us per element, a join ~0.1 us.
        ids = "{" + ",".join([str(p.attempt.job.id) for p in batch]) + "}"
        tokens = "{" + ",".join([str(p.attempt.job.lease_token) for p in batch]) + "}"
        outcomes = "{" + ",".join([p.outcome.outcome for p in batch]) + "}"
        errors = [p.outcome.error for p in batch]
        delays = [p.outcome.delay for p in batch]
        results = [p.outcome.result for p in batch]
        return [self.worker, ids, tokens, outcomes,
                errors if any(e is not None for e in errors) else None,
                delays if any(d is not None for d in delays) else None,
                results if any(r is not None for r in results) else None]

    def _settle_args(self, p: Pending) -> list[Any]:
        o = p.outcome
        return [p.attempt.job.id, self.worker, p.attempt.job.lease_token, o.outcome, o.error,
                o.delay, o.result]

    def _settle_one(self, conn: Conn, p: Pending) -> str | None:
        cur = conn.cursor(row_factory=scalar_row)
        try:
            with _guarded(conn):
                state = _state(cur.execute(queries.SETTLE, self._settle_args(p)).fetchone())
        except psycopg.Error as exc:
            if not refused(exc):
                raise
            if p.outcome.outcome == "failed" and p.outcome.delay is None and p.outcome.result is None:
                log.error(_("job.cannot_settle_failed", id=p.attempt.job.id, error=exc))
                return None  # the lease expires, reap returns the job
            # a value the database refuses (a result jsonb cannot hold, a delay out of
            # range): the attempt fails, with the reason
            log.warning(_("job.cannot_settle", id=p.attempt.job.id, outcome=p.outcome.outcome,
                          error=exc))
            p.outcome = Outcome("failed", describe(exc, f"cannot settle {p.outcome.outcome}: "))
            state = _state(cur.execute(queries.SETTLE, self._settle_args(p)).fetchone())
        return state

    def _settle_with_chained(self, conn: Conn, p: Pending) -> str | None:
        """done and the chained jobs in one transaction; none of them when the lease is lost."""
        state: str | None = None
        try:
            with conn.transaction():
                cur = conn.cursor(row_factory=scalar_row)
                state = _state(cur.execute(queries.SETTLE, self._settle_args(p)).fetchone())
                if state is None:
                    raise psycopg.Rollback()
                for c in p.chained:
                    conn.execute(queries.ENQUEUE, [c.topic, Jsonb(to_json(c.payload), dumps=_identity),
                                                   c.key, None, c.priority, c.delay, c.group,
                                                   None if c.trace_context is None
                                                   else Jsonb(c.trace_context)])
        except psycopg.Error as exc:
            if not refused(exc):
                raise
            error = translate(exc, PRODUCER, who(conn)) or exc  # chained: an enqueue
            log.warning(_("job.chain_refused", id=p.attempt.job.id, error=error))
            p.outcome = Outcome("failed", describe(error, "chain: "))
            p.chained = ()
            return self._settle_one(conn, p)
        return state

    # --- counting -------------------------------------------------------------------

    def settled(self, batch: list[Pending], states: dict[int, str | None]) -> None:
        """The database answered for ``batch``: release the leases, count, log the dead."""
        counters = self._counters
        release = self._release
        for p in batch:
            att = p.attempt
            job = att.job
            release(att)
            state = states.get(job.id)
            counts = counters[job.topic]
            if state is None:
                counts.lease_lost += 1
            elif state == "done":
                counts.settled["done"] += 1
            elif state == "dead":
                counts.settled["dead"] += 1
                log.error(_("job.dead", id=job.id, topic=job.topic, attempt=job.attempt,
                            max_attempts=job.max_attempts, error=p.outcome.error),
                          extra=log_extra(job, "dead"))
            else:
                counts.settled[p.outcome.outcome] += 1


class SettleThread:
    """Writes the settler's batches on a thread and a connection of its own.

    The loop ``hand``s over what the settler ``take``s and, at its next turns,
    ``collect``s the answers (``Settler.settled`` runs on the loop's thread). Outcomes
    that come while a batch is being written go together in the next one. A lost
    connection keeps the batch and reconnects with backoff (repeating a settle changes
    nothing: it is fenced by the lease); a missing right (FATAL_SQLSTATES) stops the
    thread and is left in ``fatal`` for the loop."""

    def __init__(self, settler: Settler, connect: Callable[[], Conn], wake: Callable[[], None],
                 guard: Callable[[Conn], Any]) -> None:
        self._settler = settler
        self._connect = connect
        self._wake = wake
        self._guard = guard  # the watchdog's guard of one write (cuts a silent connection)
        self._lock = threading.Lock()
        self._todo: list[Pending] = []
        self._answers: list[tuple[list[Pending], dict[int, str | None]]] = []
        self._event = threading.Event()
        self._closing = threading.Event()
        self._thread: threading.Thread | None = None
        self._renew = False  # open a new connection before the next write
        self.in_flight = 0  # handed and not yet collected (loop thread only)
        self.fatal: BaseException | None = None  # a missing right, as the worker reports it

    def start(self, name: str) -> None:
        self._thread = threading.Thread(target=self._run, name=f"brooq-settle-{name}", daemon=True)
        self._thread.start()

    def hand(self, batch: list[Pending]) -> None:
        self.in_flight += len(batch)
        with self._lock:
            self._todo.extend(batch)
        self._event.set()

    def renew(self) -> None:
        """The loop lost its connection: write the next batch on a new one as well. Both go
        the same way to the server; a path that went silent for one (which only the
        watchdog notices, after a statement's time) is not waited out twice."""
        self._renew = True

    def collect(self) -> int:
        """Count what the database answered since the last call (loop thread); how many
        outcomes it answered."""
        if not self._answers:
            return 0
        with self._lock:
            answers, self._answers = self._answers, []
        answered = 0
        for batch, states in answers:
            self.in_flight -= len(batch)
            answered += len(batch)
            self._settler.settled(batch, states)
        return answered

    def wait(self, timeout: float) -> None:
        """Until everything handed over is answered, or ``timeout`` seconds (loop thread)."""
        deadline = time.monotonic() + timeout
        while self.in_flight and self.fatal is None and time.monotonic() < deadline:
            time.sleep(0.001)
            self.collect()

    def stop(self, timeout: float = 2.0) -> None:
        """Write what is handed over (one try), then end the thread."""
        self._closing.set()
        self._event.set()
        if self._thread is not None:
            self._thread.join(timeout)
        self.collect()

    @staticmethod
    def _one_per_job(todo: list[Pending]) -> tuple[list[Pending], list[Pending]]:
        """The batch to write now, and what waits: a job reaped and claimed again by this
        worker can have two outcomes in hand (the old attempt's is fenced off by its
        lease token); they go in two writes, the older first."""
        ids = {p.attempt.job.id for p in todo}
        if len(ids) == len(todo):
            return todo, []
        now: list[Pending] = []
        later: list[Pending] = []
        seen: set[int] = set()
        for p in todo:
            job_id = p.attempt.job.id
            (later if job_id in seen else now).append(p)
            seen.add(job_id)
        return now, later

    def _run(self) -> None:
        conn: Conn | None = None
        failures = 0
        batch: list[Pending] = []
        try:
            while True:
                if not batch:
                    self._event.wait(1.0)
                    self._event.clear()
                with self._lock:
                    batch, self._todo = self._one_per_job(batch + self._todo)
                if not batch:
                    if self._closing.is_set():
                        return
                    continue
                states: dict[int, str | None] = {}
                try:
                    if self._renew and conn is not None:
                        self._renew = False
                        with contextlib.suppress(Exception):
                            conn.close()
                        conn = None
                    if conn is None:
                        conn = self._connect()
                    with self._guard(conn):
                        self._settler.write(conn, batch, states)
                    failures = 0
                except Exception as exc:
                    if isinstance(exc, psycopg.Error) and exc.sqlstate in FATAL_SQLSTATES:
                        self.fatal = translate(exc, WORKER, who(conn) if conn else "") or exc
                        return
                    if not isinstance(exc, psycopg.Error):
                        log.exception(_("worker.loop_error", worker=self._settler.worker))
                    if conn is not None:
                        with contextlib.suppress(Exception):  # closing a broken connection may fail too
                            conn.close()
                        conn = None
                    if self._closing.is_set():
                        return  # stopping: what is not written is left to its lease
                    failures += 1
                    log.debug(_("worker.settle_connection_lost", worker=self._settler.worker,
                                error=one_line(exc, 300), failures=failures))
                    self._closing.wait(min(5.0, 0.05 * 2 ** min(failures, 7)))
                finally:
                    written, batch = answered(batch, states)
                    if written:
                        with self._lock:
                            self._answers.append((written, states))
                        self._wake()
        finally:
            if conn is not None:
                conn.close()
            self._wake()
