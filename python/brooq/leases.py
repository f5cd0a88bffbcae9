"""The leases: which claimed jobs this worker holds, renewing them, and losing one.

A job is held from its claim until its outcome is settled. Every lease/3 the loop
asks brooq.heartbeat to renew them all; an id missing from the answer is a lost
lease (the job was canceled or reaped): the attempt is closed, counted, and handed
to ``on_lost``, which stops its handler and drops its outcome, so nothing is ever
written for it. A job claimed again by this worker before a heartbeat noticed the
loss (reaped, then claimed anew) loses its older attempt the same way.

Each attempt also carries when its lease was last confirmed (claim, or a heartbeat
that kept it) and a conservative local deadline: the loop uses them to start no
prefetched job on a lease it has not confirmed lately (see Runner.run_sync).

Runs on the loop's thread and connection and starts no thread: a test drives it
with a connection and attempts. An attempt whose outcome is being written (``settling``)
is renewed like the others, but never lost by a heartbeat: its settle may have committed
a moment before, and the settle's own answer (a state, or NULL for a lost lease) counts it.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import psycopg
from psycopg.rows import scalar_row
from psycopg.types.json import Jsonb

from brooq import queries
from brooq.attempt import Attempt
from brooq.counters import Counters


class Leases:
    """The attempts this worker holds a lease for, by job id."""

    def __init__(self, worker: str, lease: timedelta, counters: Counters,
                 on_lost: Callable[[Attempt, float], None]) -> None:
        self.worker = worker
        self.lease = lease
        self.every = lease.total_seconds() / 3
        self.next_heartbeat = 0.0
        self._counters = counters.topics
        self._on_lost = on_lost
        self._held: dict[int, Attempt] = {}

    def __len__(self) -> int:
        return len(self._held)

    def hold(self, attempt: Attempt, now: float) -> None:
        """A claim gave us this job: hold it until it is settled or lost."""
        if not self._held:
            self.next_heartbeat = now + self.every
        job_id = attempt.job.id
        old = self._held.get(job_id)
        if old is not None and not old.settling:  # reaped and claimed again by us before a
            self.lose(old, now)                    # heartbeat noticed (a settling one: its settle answers)
        self._held[job_id] = attempt
        self._confirm(attempt, now)

    def _confirm(self, attempt: Attempt, now: float) -> None:
        attempt.confirmed = now
        attempt.expires = now + self.lease.total_seconds()
        if attempt.execution_ends is not None:  # claim and heartbeat end it at max_execution
            attempt.expires = min(attempt.expires, attempt.execution_ends)

    def release(self, attempt: Attempt) -> None:
        """Its outcome is settled (or its lease lost): stop renewing it."""
        job_id = attempt.job.id
        if self._held.get(job_id) is attempt:
            del self._held[job_id]

    def lose(self, attempt: Attempt, now: float) -> None:
        """The lease is gone (canceled, reaped): close the attempt, write nothing for it."""
        self.release(attempt)
        attempt.closed = True
        self._counters[attempt.job.topic].lease_lost += 1
        self._on_lost(attempt, now)

    def due(self, now: float) -> bool:
        return bool(self._held) and now >= self.next_heartbeat

    def renew_soon(self, now: float) -> None:
        """Renew at the next turn (after a reconnect: leases may have run short meanwhile)."""
        self.next_heartbeat = now

    def heartbeat(self, conn: psycopg.Connection[Any], now: float,
                  only: list[Attempt] | None = None) -> None:
        """Renew every held lease (or those of ``only``, held ones, without moving the next
        heartbeat) in one brooq.heartbeat; lose those it does not return. The progress
        handlers reported since the last heartbeat rides along (None: unchanged)."""
        if only is None:
            ids = list(self._held)
            self.next_heartbeat = now + self.every
        else:
            ids = [a.job.id for a in only if self._held.get(a.job.id) is a]
            if not ids:
                return
        jobs = [self._held[i].job for i in ids]
        tokens = [job.lease_token for job in jobs]
        fresh = [job.reported if job.reported is not job.reported_sent else None for job in jobs]
        progress = [None if p is None else Jsonb(p) for p in fresh] if any(fresh) else None
        cur = conn.cursor(row_factory=scalar_row)
        kept = set(cur.execute(queries.HEARTBEAT, [self.worker, ids, self.lease, tokens, progress]).fetchall())
        for job, sent in zip(jobs, fresh, strict=True):
            if sent is not None:
                job.reported_sent = sent
        for job_id in ids:
            attempt = self._held.get(job_id)
            if attempt is None:
                continue
            if job_id in kept:
                self._confirm(attempt, now)
            elif not attempt.settling and not attempt.job.suspending:  # a settling one may be settled
                # already: its settle answers; a suspending one (a durable sleep or wait) too
                self.lose(attempt, now)
