"""The worker's ticker: the periodic jobs the workers tick (brooq.schedule with
ticker 'workers', the choice where pg_cron is absent).

Every running worker calls brooq.tick_schedules about once a second, just after each
whole second, on the loop's connection. The database decides everything: which
schedules are due, one worker per schedule (their rows are taken FOR NO KEY UPDATE SKIP
LOCKED), the tick's job (with no idempotency key: the schedule's row, not a key, makes
the tick once) and the next tick, all in the one statement's transaction. A worker that
dies in the middle of a tick leaves nothing of it: its transaction rolls back and the
next call, its own or another worker's, ticks the same tick. So however many workers
run, each tick gets one job.

Ticking shares the connection with the claims and heartbeats, so a tick must not wait:
it needs no lock a producer can hold, and brooq.tick_schedules cuts each of its lock
waits at 500 ms (an admin's DDL, a drop_topic in progress). A tick that enqueued
nothing says why in its row (the topic refuses the payload now, a lock waited for:
55P03): logged at WARNING, and one that waited stays owed. A call that failed whole
(the statement timeout, a lock outside the ticks) is logged too. Either way the tick
is tried again at the next second. Testable by hand on a real connection:
Ticker(name).tick(conn, now).
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
from psycopg.rows import class_row

from brooq import queries
from brooq.messages import _

log = logging.getLogger("brooq.worker")

TICK_EVERY = 1.0  # seconds: the finest schedule is one tick a second
TICK_AFTER = 0.05  # seconds after each whole second of the wall clock: the tick has come
MAX_TICKS = 1000  # ticks in one call at most (brooq.tick_schedules' max_ticks)


@dataclass(frozen=True, slots=True)
class TickedJob:
    """A row of brooq.tick_schedules: what one tick of one schedule did."""

    schedule: str
    tick: datetime
    job_id: int | None
    created: bool
    error: str | None


class Ticker:
    """When to tick next, and the tick itself (on the loop's connection)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.next_tick = 0.0  # monotonic: at once, then after each whole second
        self.enqueued = 0  # jobs this worker's ticks enqueued

    def due(self, now: float) -> bool:
        return now >= self.next_tick

    def tick(self, conn: psycopg.Connection[Any], now: float) -> list[TickedJob]:
        """Tick the schedules that are due; the ticks done (or failed), for tests."""
        wall = time.time()
        self.next_tick = now + (math.floor(wall) + TICK_EVERY + TICK_AFTER - wall)
        try:
            rows = conn.cursor(row_factory=class_row(TickedJob)).execute(queries.TICK_SCHEDULES, [MAX_TICKS]).fetchall()
        except (psycopg.errors.QueryCanceled, psycopg.errors.LockNotAvailable) as exc:
            # a tick that waited too long rolled back whole: it is still owed, next second
            log.warning(_("worker.tick_waited", worker=self.name, error=str(exc).strip().splitlines()[0]))
            return []
        for row in rows:
            if row.error is not None:
                log.warning(_("worker.tick_failed", worker=self.name, schedule=row.schedule,
                              tick=row.tick.isoformat(), error=row.error))
            elif row.created:
                self.enqueued += 1
        return rows
