"""Exceptions a handler raises to choose its job's outcome.

- return normally          -> done (the return value, if not None, stored as result)
- raise Retry(delay)       -> retry after ``delay`` (clamped to the topic's backoff_max);
                              Retry() without a delay uses the topic's backoff. Either
                              way the attempt counts: on the last one the job is dead.
- raise PreserveAttempt()  -> retry without counting this attempt (never dead)
- raise Cancel(reason)     -> canceled, never retried
- raise Dead(reason)       -> dead at once, whatever attempts are left: no attempt can
                              succeed (``reason`` becomes last_error, after "Dead: ")
- raise anything else      -> failed attempt, "ExcType: message" in last_error

A signal also counts when it is wrapped: ``raise SomeError(...) from Retry(...)``, or an
exception raised while handling a signal, is honoured like Go's ``errors.As``: the first
signal on the chain Python prints in a traceback (``__cause__``, else ``__context__``
unless ``from None`` suppressed it) chooses the outcome (see find_signal).
"""

from __future__ import annotations

from datetime import timedelta

CHAIN_MAX = 100  # exceptions looked at on a chain (a cycle is also cut by identity)


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


class Dead(HandlerSignal):
    """Make the job dead at once, whatever attempts are left: the handler's verdict that
    no attempt can succeed (as a payload that does not fit its type). ``reason`` is
    recorded in last_error."""

    def __init__(self, reason: str = "") -> None:
        self.reason = reason
        super().__init__(reason or "dead: no attempt can succeed")


def find_signal(exc: BaseException) -> HandlerSignal | None:
    """The first HandlerSignal on ``exc``'s chain (``exc`` itself first), as Go's errors.As.

    The chain is the one a traceback shows: ``__cause__`` when set (``raise X from Y``),
    else ``__context__`` (an exception raised while handling another) unless
    ``raise X from None`` suppressed it. Cycles (possible: both attributes are
    writable) and absurdly long chains end the walk."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen and len(seen) < CHAIN_MAX:
        if isinstance(current, HandlerSignal):
            return current
        seen.add(id(current))
        if current.__cause__ is not None:
            current = current.__cause__
        elif current.__suppress_context__:
            return None
        else:
            current = current.__context__
    return None
