"""Counters of a running worker, for progress displays (read with Worker.snapshot()).

The numbers come from brooq.counters, which Prometheus reads too."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class TopicSnapshot:
    """Counts of one topic since the worker started (see WorkerSnapshot)."""

    claimed: int = 0
    done: int = 0
    failed: int = 0
    retried: int = 0
    dead: int = 0
    canceled: int = 0
    lease_lost: int = 0
    hung: int = 0


@dataclass(frozen=True)
class WorkerSnapshot:
    """What a worker did since it started; every settled attempt is counted once.

    claimed     attempts started (jobs claimed)
    done        settled done
    failed      failed attempts that will be retried after the topic's backoff
                (exception, timeout, Retry() without a delay)
    retried     attempts settled with Retry(delay) or PreserveAttempt, to be retried
    dead        attempts that made their job dead: a failure on the last attempt, or
                dead at once (a payload that does not fit its type, Dead)
    canceled    handlers that raised Cancel
    lease_lost  attempts whose lease was lost (job canceled from outside, or reaped):
                nothing was written for them
    hung        handlers still running hung_grace after being told to stop
    in_flight   handlers running now
    prefetched  jobs claimed ahead (prefetch), leased, waiting for a free handler thread
    started_at  time.monotonic() when run() started (0.0 before)
    """

    name: str
    claimed: int
    done: int
    failed: int
    retried: int
    dead: int
    canceled: int
    lease_lost: int
    hung: int
    in_flight: int
    prefetched: int
    started_at: float
    connected: bool
    stopping: bool
    topics: Mapping[str, TopicSnapshot] = field(default_factory=dict)
