"""The loop's watchdog: cut the loop's connection when a turn on it gets no answer.

statement_timeout bounds a statement on the server, and TCP keepalives notice a peer
that no longer answers at the TCP level. Neither helps when something between the
worker and PostgreSQL keeps the TCP connection alive but forwards nothing (a proxy or
a pooler that hangs, a middlebox that blackholes one flow): the kernel acknowledges
every byte and every keepalive probe, and the loop would wait in recv() forever,
its handlers running on leases nobody renews.

The loop wraps each turn in ``guard(conn)``; a daemon thread (started on first use,
ended by stop() when the run ends) shuts the connection's socket down when one guarded turn lasts longer than
``limit`` seconds. The blocked call then fails like any lost connection, and the
loop reconnects. Notice bound: ``limit`` plus one check period.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import psycopg

from brooq.messages import _

log = logging.getLogger("brooq.worker")


class Watchdog:
    def __init__(self, name: str, limit: float, period: float = 0.25) -> None:
        self.name = name
        self.limit = limit
        self.period = period
        self._lock = threading.Lock()
        self._conn: psycopg.Connection[Any] | None = None
        self._since = 0.0
        self._thread: threading.Thread | None = None
        self._quit = threading.Event()

    @contextlib.contextmanager
    def guard(self, conn: psycopg.Connection[Any]) -> Iterator[None]:
        """One turn of the loop on ``conn``."""
        if self._thread is None:
            self._quit = threading.Event()
            self._thread = threading.Thread(target=self._watch, args=(self._quit,),
                                            name=f"brooq-watchdog-{self.name}", daemon=True)
            self._thread.start()
        with self._lock:
            self._conn, self._since = conn, time.monotonic()
        try:
            yield
        finally:
            with self._lock:
                self._conn = None

    def check(self, now: float) -> bool:
        """Cut the guarded connection if its turn is overdue; whether it did."""
        with self._lock:
            conn = self._conn
            if conn is None or now - self._since <= self.limit:
                return False
            self._conn = None  # cut once
            with contextlib.suppress(Exception):  # already closed: nothing to cut
                fd = conn.pgconn.socket
                with socket.socket(fileno=os.dup(fd)) as s:
                    s.shutdown(socket.SHUT_RDWR)
        log.warning(_("worker.watchdog_cut", worker=self.name, seconds=now - self._since))
        return True

    def stop(self) -> None:
        """End the watching thread (a later guard() starts another)."""
        thread, self._thread = self._thread, None
        if thread is not None:
            self._quit.set()
            thread.join(timeout=2 * self.period + 1.0)

    def _watch(self, quit: threading.Event) -> None:
        while not quit.wait(self.period):
            self.check(time.monotonic())
