"""How a handler's return value or exception becomes the outcome sent to brooq.settle_many."""

from __future__ import annotations

import asyncio
import inspect
from datetime import timedelta
from typing import Any, NamedTuple

from brooq.job import Suspended
from brooq.payload import PayloadMismatch, to_json
from brooq.signals import Cancel, Dead, PreserveAttempt, Retry, find_signal
from brooq.states import OutcomeName

ERROR_MAX = 2000  # brooq.settle_many keeps that many characters of last_error


class Outcome(NamedTuple):
    """One settle_many element: outcome (brooq.states.OUTCOMES), error text, delay, result
    as JSON text."""

    outcome: OutcomeName
    error: str | None = None
    delay: timedelta | None = None
    result: str | None = None


DONE = Outcome("done")  # shared (an Outcome is immutable): a NamedTuple costs ~1 us to make
# A durable sleep or wait ended the attempt in the database already (brooq.sleep,
# brooq.wait_for_event: the attempt given back, as preserve's): the settler writes
# nothing for it (Settler.add) and counts it as preserve.
SUSPENDED = Outcome("preserve", "suspended: a durable sleep or wait")


def of_return(value: Any) -> Outcome:
    """done, with the value as result (None: no result); failed if it is not JSON."""
    if value is None:
        return DONE
    if inspect.isawaitable(value):
        if inspect.iscoroutine(value):
            value.close()  # never awaited: close it without a RuntimeWarning
        return Outcome("failed", error="the handler returned an awaitable: declare it with async def")
    try:
        return Outcome("done", result=to_json(value))
    except (TypeError, ValueError) as exc:
        return Outcome("failed", error=describe(exc, "the return value is not JSON: "))


def of_exception(exc: BaseException) -> Outcome:
    """The outcome a handler chose by raising ``exc``: a signal on its chain (find_signal)
    chooses it, with the signal's text and, when wrapped, the outer exception's."""
    if isinstance(exc, Suspended):
        return SUSPENDED
    if isinstance(exc, PayloadMismatch):
        # It will never fit: dead at once, the mismatch (naming the field) recorded as
        # the cause (the outcome dead: invariant 7, docs/architecture.md).
        return Outcome("dead", " ".join(str(exc).split())[:ERROR_MAX] or "payload does not fit")
    signal = find_signal(exc)
    if signal is None:
        if isinstance(exc, asyncio.CancelledError):
            return Outcome("failed", "CancelledError: the handler's task was canceled")
        return Outcome("failed", describe(exc))
    outcome = of_signal(signal)
    if signal is exc:
        return outcome
    error = f"{outcome.error} (raised as {describe(exc)})"[:ERROR_MAX]
    return outcome._replace(error=error)


def of_signal(exc: BaseException) -> Outcome:
    """The outcome of one signal (Retry, PreserveAttempt, Cancel, Dead)."""
    if isinstance(exc, Retry):
        delay = None if exc.delay is None else max(exc.delay, timedelta(0))
        error = f"Retry: {exc.reason}" if exc.reason else "Retry requested by the handler"
        return Outcome("failed" if delay is None else "delay", error, delay)
    if isinstance(exc, PreserveAttempt):
        delay = None if exc.delay is None else max(exc.delay, timedelta(0))
        error = f"PreserveAttempt: {exc.reason}" if exc.reason else "attempt preserved by the handler"
        return Outcome("preserve", error, delay)
    if isinstance(exc, Cancel):
        return Outcome("cancel", f"Cancel: {exc.reason}" if exc.reason else "canceled by the handler")
    if isinstance(exc, Dead):
        return Outcome("dead", f"Dead: {exc.reason}" if exc.reason else "dead: no attempt can succeed (the handler)")
    raise TypeError(f"not a handler signal: {type(exc).__name__}")


def describe(exc: BaseException, prefix: str = "") -> str:
    """'ExcType: message', one line, cut to what last_error keeps (no traceback, no locals)."""
    message = " ".join(str(exc).split())
    text = f"{prefix}{type(exc).__name__}: {message}" if message else f"{prefix}{type(exc).__name__}"
    return text[:ERROR_MAX]
