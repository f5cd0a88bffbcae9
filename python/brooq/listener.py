"""The listener: LISTEN brooq on a connection of its own, and wake the loop when a job
of one of our topics is enqueued.

A notification is a latency hint, never the carrier: the loop also polls every
poll_interval, and after a (re)connect the listener says "notified" at once, since
a notification may have been missed meanwhile. The loop asks ``claim_at`` when to
claim, ``take``s the request as it claims, and reports what it found (``claimed``).

Wake-ups are coalesced: NOTIFY is open to every role that can connect, and a
flood of them must not turn into a flood of claims. A claim a notification asked
for that finds nothing starts a quiet spell, 1 ms after the first such claim and
doubling up to QUIET_MAX (100 ms), during which notifications only mark the
claim as due at its end; a claim that finds jobs ends it. So a flood costs an idle
worker at most 1/QUIET_MAX = 10 claims a second beside its polls, and a real
enqueue during a flood waits at most QUIET_MAX.

``run`` is the body of the listener's thread (reconnecting with backoff);
``listen`` and ``receive`` are its two steps, which a test drives on a connection
without any thread.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any

import psycopg

from brooq import queries
from brooq.messages import _
from brooq.redact import one_line

log = logging.getLogger("brooq.worker")

QUIET_MIN = 0.001
QUIET_MAX = 0.1
RECONNECT_MIN = 0.1
RECONNECT_MAX = 5.0


def backoff(failures: int) -> float:
    """Seconds to wait before the next connection attempt after ``failures`` in a row."""
    return float(min(RECONNECT_MAX, RECONNECT_MIN * 2 ** (failures - 1)))


class Listener:
    """Wakes the loop on notifications for our topics."""

    def __init__(self, worker: str, topics: Iterable[str], wake: Callable[[], None]) -> None:
        self.worker = worker
        self.topics = frozenset(topics)
        self.wake = wake
        self.notified = True  # jobs may be ready before the first notification: claim at once
        self.quiet_until = 0.0  # no claim for a notification before this (monotonic time)
        self._empty = 0  # claims in a row that a notification asked for and that found nothing

    def claim_at(self, now: float) -> float | None:
        """When a notification asks for a claim: None when none came."""
        return max(now, self.quiet_until) if self.notified else None

    def take(self) -> bool:
        """Before a claim: whether a notification asked for one, cleared (one that comes
        while the claim runs asks again)."""
        asked, self.notified = self.notified, False
        return asked

    def claimed(self, now: float, found: bool, notified: bool) -> None:
        """A claim ran: ``found`` jobs or not, ``notified`` when only a notification asked for it."""
        if found:
            self._empty = 0
            self.quiet_until = 0.0
        elif notified:
            self._empty += 1
            self.quiet_until = now + min(QUIET_MAX, QUIET_MIN * 2 ** min(self._empty - 1, 20))

    def listen(self, conn: psycopg.Connection[Any]) -> None:
        """Start listening on ``conn``; a notification may have been missed until now."""
        conn.execute(queries.LISTEN)
        self.notified = True
        self.wake()

    def receive(self, conn: psycopg.Connection[Any], timeout: float) -> int:
        """Take the notifications that arrive within ``timeout`` seconds; wake the loop for
        each one of our topics. Returns how many were ours."""
        ours = 0
        for note in conn.notifies(timeout=timeout):
            if note.payload in self.topics:
                ours += 1
                self.notified = True
                self.wake()
        return ours

    def run(self, dsn: str, connect_kwargs: dict[str, Any], closing: threading.Event) -> None:
        """Listen until ``closing`` is set, reconnecting with backoff (the thread's body)."""
        failures = 0
        while not closing.is_set():
            try:
                with psycopg.connect(dsn, **connect_kwargs) as conn:
                    self.listen(conn)
                    failures = 0
                    while not closing.is_set():
                        self.receive(conn, 0.5)
            except psycopg.Error as exc:
                failures += 1
                delay = backoff(failures)
                log.debug(_("worker.listener_lost", worker=self.worker, error=one_line(exc, 300), delay=delay))
                closing.wait(delay)
