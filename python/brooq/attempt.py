"""One claimed job on its way from claim to settle, and the registered handler it runs with.

Shared by the worker's parts: the runner (runner.py) makes an Attempt per claimed job
and runs its handler, the leases (leases.py) hold it, the settler (settler.py) writes
its outcome.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from brooq.job import Job
from brooq.settings import TopicSettings

Handler = Callable[[Job], Any]

# Attempt.phase: claimed and waiting for a thread (prefetched), running, never run
QUEUED, STARTED, SKIPPED = 0, 1, 2


@dataclass(frozen=True)
class TopicHandler:
    """A registered handler, its attempt timeout, and the topic settings it declares at start."""

    topic: str
    fn: Handler
    is_async: bool
    timeout: timedelta | None
    settings: TopicSettings


class Attempt:
    """One claimed job from claim to settle (loop thread only, except `elapsed`)."""

    __slots__ = (
        "cancel_requested",
        "canceled_at",
        "closed",
        "confirmed",
        "deadline",
        "elapsed",
        "execution_ends",
        "expires",
        "handler",
        "hung_reported",
        "job",
        "phase",
        "settling",
        "started",
        "task",
    )

    def __init__(self, job: Job, handler: TopicHandler) -> None:
        self.job = job
        self.handler = handler
        self.phase = QUEUED  # changed under the Runner's lock: a pool thread starts it, or the loop withdraws it
        self.started = 0.0
        self.deadline: float | None = None
        self.closed = False  # an outcome is queued or the lease is lost: the handler's answer is ignored
        self.settling = False  # its outcome is being written: the settle's answer decides its fate
        self.canceled_at: float | None = None
        self.hung_reported = False
        self.elapsed = 0.0
        self.task: asyncio.Task[None] | None = None  # async handlers (event loop thread only)
        self.cancel_requested = False  # async handlers (event loop thread only)
        # The lease, by the local monotonic clock (set by Leases at claim and at each
        # heartbeat that kept it): when it was last known to be ours, and a conservative
        # deadline (both taken before the round trip that claimed or renewed it).
        self.confirmed = 0.0
        self.expires = float("inf")
        # When the job's max_execution runs out, by the local monotonic clock (None: no
        # limit): the claim's instant (taken before its round trip) + execution_left,
        # less a margin (runner.EXECUTION_MARGIN), so before the database's deadline.
        # Set by the runner at claim.
        self.execution_ends: float | None = None

    def begin(self, now: float) -> None:
        """The handler starts now: the timeout counts from here."""
        self.phase = STARTED
        self.started = now
        timeout = self.handler.timeout
        self.deadline = None if timeout is None else now + timeout.total_seconds()
        if self.execution_ends is not None:
            self.deadline = (self.execution_ends if self.deadline is None
                             else min(self.deadline, self.execution_ends))

    def out_of_time(self, now: float) -> bool:
        """True once the job's max_execution has run out (by the local clock)."""
        return self.execution_ends is not None and now >= self.execution_ends

