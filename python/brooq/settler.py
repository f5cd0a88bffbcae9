"""The settler: owns finished attempts until the database has their outcome.

Handlers' outcomes wait in the outbox; the loop decides when to write them, and the
settler writes them: the plain ones in one brooq.settle_many (in the same pipeline
as the next claim when one is due: one round trip, one commit), an attempt with
chained jobs in a transaction of its own with those jobs, and, when the database
refuses a value of the batch, one by one, so one bad result cannot hold back the
others. It counts what the database answered: a NULL state means the lease was
lost and nothing was written.

It runs on the loop's thread and connection and never starts a thread: a test
drives it with a connection and attempts.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, NamedTuple

import psycopg
from psycopg.rows import scalar_row
from psycopg.types.json import Jsonb

from brooq import queries
from brooq.attempt import Attempt, Pending
from brooq.counters import Counters
from brooq.errors import FATAL_SQLSTATES, PRODUCER, refused, translate, who
from brooq.job import Chained, Job
from brooq.messages import _
from brooq.outcome import Outcome, describe
from brooq.payload import to_json
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


def _identity(text: Any) -> str:
    return str(text)


def _state(value: Any) -> str | None:
    """brooq.settle's answer: the new state, None when the lease was lost."""
    return None if value is None else str(value)


class Settler:
    """The outbox of finished attempts, and how they reach brooq.settle_many."""

    def __init__(self, worker: str, counters: Counters, release: Callable[[Attempt], None]) -> None:
        self.worker = worker
        self._counters = counters.topics
        self._release = release  # the leases stop holding a settled attempt
        self._outbox: list[Pending] = []
        self._settled_rows = fields_row(Settled)
        self._job_rows = fields_row(Job)

    def __len__(self) -> int:
        return len(self._outbox)

    def add(self, attempt: Attempt, outcome: Outcome, chained: list[Chained] | None = None) -> None:
        """Queue an attempt's outcome (and, for done, the jobs it chained)."""
        self._outbox.append(Pending(attempt, outcome, chained or ()))

    def drop(self, attempt: Attempt) -> None:
        """Forget the attempt's outcome: its lease is lost, nothing may be written for it."""
        self._outbox = [p for p in self._outbox if p.attempt is not attempt]

    # --- writing --------------------------------------------------------------------

    def settle(self, conn: Conn) -> None:
        """Settle every outcome in the outbox."""
        plain = [p for p in self._outbox if not p.chained]
        if plain:
            try:
                rows = conn.cursor(row_factory=self._settled_rows).execute(
                    queries.SETTLE_MANY, self._settle_many_args(plain)).fetchall()
            except psycopg.Error as exc:  # a value the database refused: settle one by one
                if not refused(exc):
                    raise
                log.warning(_("worker.settle_many_failed", worker=self.worker, error=exc))
                rows = [Settled(p.attempt.job.id, self._settle_one(conn, p)) for p in plain]
            self._settled(plain, dict(rows))
            self._outbox = [p for p in self._outbox if p.chained]
        self._settle_chained(conn)

    def settle_and_claim(self, conn: Conn, claim_args: list[Any]) -> list[Job] | None:
        """settle_many and brooq.claim in one pipeline: one round trip, one implicit
        transaction. Returns the claimed jobs; None when the claim did not run (no plain
        outcome to settle, or a refused value rolled both back): then everything is
        settled and the caller claims by itself. Chained outcomes stay in the outbox
        (settle() writes them) so that the claimed jobs start first."""
        plain = [p for p in self._outbox if not p.chained]
        if not plain:
            self.settle(conn)
            return None
        try:
            settling, claiming = self._pipeline(conn, claim_args, plain)
            settled = settling.fetchall()
            claimed = claiming.fetchall()
        except psycopg.Error as exc:
            if not refused(exc) or exc.sqlstate in FATAL_SQLSTATES:
                raise
            # a value the database refused rolled both back: do them one at a time
            self.settle(conn)
            return None
        self._settled(plain, dict(settled))
        self._outbox = [p for p in self._outbox if p.chained]
        return claimed

    def _pipeline(self, conn: Conn, claim_args: list[Any],
                  plain: list[Pending]) -> tuple[psycopg.Cursor[Settled], psycopg.Cursor[Job]]:
        """settle_many and claim sent in one pipeline; the first error raised once.

        An error inside the block (a lost connection shows there first) is kept and
        raised after the block: leaving the block with it would make psycopg log
        "error ignored terminating <psycopg.Pipeline [BAD]>" when the pipeline's own
        exit fails on the same dead connection."""
        failure: psycopg.Error | None = None
        try:
            with conn.pipeline():
                try:
                    settling = conn.cursor(row_factory=self._settled_rows).execute(
                        queries.SETTLE_MANY, self._settle_many_args(plain))
                    claiming = conn.cursor(row_factory=self._job_rows).execute(
                        queries.CLAIM, claim_args)
                except psycopg.Error as exc:
                    failure = exc
        except psycopg.Error as exc:
            raise failure or exc from None
        if failure is not None:
            raise failure
        return settling, claiming

    def _settle_chained(self, conn: Conn) -> None:
        while self._outbox:
            p = self._outbox[0]
            state = self._settle_with_chained(conn, p)
            self._settled([p], {p.attempt.job.id: state})
            self._outbox.pop(0)

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

    def _settled(self, batch: list[Pending], states: dict[int, str | None]) -> None:
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
