"""Exceptions a handler raises to choose its job's outcome.

- return normally          -> done (the return value, if not None, stored as result)
- raise Retry(delay)       -> retry after ``delay`` (clamped to the topic's backoff_max);
                              Retry() without a delay uses the topic's backoff. Either
                              way the attempt counts: on the last one the job is dead.
- raise PreserveAttempt()  -> retry without counting this attempt (never dead)
- raise Cancel(reason)     -> canceled, never retried
- raise anything else      -> failed attempt, "ExcType: message" in last_error
"""

from __future__ import annotations

from datetime import timedelta


def _as_delay(delay: timedelta | float | None) -> timedelta | None:
    if delay is None or isinstance(delay, timedelta):
        return delay
    return timedelta(seconds=float(delay))


class HandlerSignal(Exception):
    """Base class of the outcome signals (never an error of the worker)."""


class Retry(HandlerSignal):
    """Retry the job after ``delay`` (a timedelta or seconds), or after the topic's backoff."""

    def __init__(self, delay: timedelta | float | None = None, reason: str = "") -> None:
        self.delay = _as_delay(delay)
        self.reason = reason
        super().__init__(reason or "retry requested")


class PreserveAttempt(HandlerSignal):
    """Retry the job without charging this attempt, after ``delay`` or the topic's backoff_base."""

    def __init__(self, delay: timedelta | float | None = None, reason: str = "") -> None:
        self.delay = _as_delay(delay)
        self.reason = reason
        super().__init__(reason or "attempt preserved")


class Cancel(HandlerSignal):
    """Cancel the job: it ends canceled and is not retried."""

    def __init__(self, reason: str = "") -> None:
        self.reason = reason
        super().__init__(reason or "canceled by the handler")
