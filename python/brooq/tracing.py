"""OpenTelemetry tracing: a span around each enqueue and around each attempt.

Active only when the application uses OpenTelemetry: opentelemetry-api installed
(the extra ``otel``: ``pip install -e '.[otel]'`` in a checkout), imported, and a tracer provider set
(``opentelemetry.trace.set_tracer_provider``, or ``opentelemetry-instrument``).
brooq never imports opentelemetry itself: an application that configured tracing
has imported it, so one look at ``sys.modules`` per enqueue or attempt decides, and
a worker without it imports nothing and makes no span.

The trace context travels in the job, beside the payload (the payload is the
producer's: invariant 5, docs/architecture.md): the enqueue span's W3C ``traceparent`` (and ``tracestate``)
goes into ``brooq.job.trace_context``, claim hands it back, and each attempt's span
is a child of the enqueue span, in the same trace. Only the W3C trace context is
carried, whatever the application's global propagator: not baggage.

Spans (OpenTelemetry's messaging conventions; ``messaging.system`` is "brooq"):

- ``enqueue TOPIC`` / ``enqueue_many TOPIC``, kind PRODUCER, around the call;
- ``process TOPIC``, kind CONSUMER, around the handler, with ``brooq.job.id``,
  ``brooq.attempt``, ``brooq.outcome`` (the handler's: done, failed, delay,
  preserve, cancel) and, when the worker told it to stop, ``brooq.stopped`` (timeout,
  lease lost, shutdown, max_execution). A failure sets the status ERROR with the
  error text; an exception other than a Retry or PreserveAttempt is recorded on it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from brooq.job import Job
from brooq.otel import Api, api, tracer
from brooq.outcome import Outcome, of_return
from brooq.signals import HandlerSignal

__all__ = ["attempt", "attempt_async", "send", "send_async", "tracer"]

T = TypeVar("T")

SYSTEM = "brooq"


def _resolved() -> Api:
    """The opentelemetry names, once tracer() found a tracer."""
    found = api()
    assert found is not None
    return found


def _send_attributes(topic: str, operation: str, count: int | None) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        "messaging.system": SYSTEM,
        "messaging.operation.type": "send",
        "messaging.operation.name": operation,
        "messaging.destination.name": topic,
    }
    if count is not None:
        attributes["messaging.batch.message_count"] = count
    return attributes


def send(topic: str, operation: str, count: int | None,
         call: Callable[[dict[str, str] | None], T]) -> T:
    """Run ``call(trace_context)`` in a PRODUCER span when tracing is on; else
    ``call(None)``. An exception is recorded on the span and raised."""
    t = tracer()
    if t is None:
        return call(None)
    otel = _resolved()
    with t.start_as_current_span(f"{operation} {topic}", kind=otel.trace.SpanKind.PRODUCER,
                                 attributes=_send_attributes(topic, operation, count)) as span:
        carrier: dict[str, str] = {}
        otel.propagator.inject(carrier)
        result = call(carrier)
        _sent(span, result)
        return result


async def send_async(topic: str, operation: str, count: int | None,
                     call: Callable[[dict[str, str] | None], Awaitable[T]]) -> T:
    """send() for brooq.aio."""
    t = tracer()
    if t is None:
        return await call(None)
    otel = _resolved()
    with t.start_as_current_span(f"{operation} {topic}", kind=otel.trace.SpanKind.PRODUCER,
                                 attributes=_send_attributes(topic, operation, count)) as span:
        carrier: dict[str, str] = {}
        otel.propagator.inject(carrier)
        result = await call(carrier)
        _sent(span, result)
        return result


def _sent(span: Any, result: Any) -> None:
    """The job id of a single enqueue (a batch's ids are many: none)."""
    job_id = getattr(result, "id", None)
    if isinstance(job_id, int):
        span.set_attribute("messaging.message.id", str(job_id))
        span.set_attribute("brooq.job.id", job_id)
        span.set_attribute("brooq.created", bool(getattr(result, "created", True)))


def _start_process(t: Any, job: Job) -> Any:
    otel = _resolved()
    parent = None
    if job.trace_context:
        parent = otel.propagator.extract(carrier=_carrier(job.trace_context))
    return t.start_as_current_span(
        f"process {job.topic}", context=parent, kind=otel.trace.SpanKind.CONSUMER,
        record_exception=False, set_status_on_exception=False,
        attributes={
            "messaging.system": SYSTEM,
            "messaging.operation.type": "process",
            "messaging.operation.name": "process",
            "messaging.destination.name": job.topic,
            "messaging.message.id": str(job.id),
            "brooq.job.id": job.id,
            "brooq.attempt": job.attempt,
            "brooq.max_attempts": job.max_attempts,
        })


def _carrier(value: Any) -> Mapping[str, str]:
    if isinstance(value, dict):
        return {k: v for k, v in value.items() if isinstance(v, str)}
    return {}


def _ended(span: Any, job: Job, outcome: Outcome, exc: BaseException | None) -> None:
    otel = _resolved()
    name = outcome.outcome
    error = outcome.error
    stopped = job.canceled.reason if job.is_canceled() else None
    if stopped is not None:
        span.set_attribute("brooq.stopped", stopped)
        if stopped == "timeout":  # the worker settles it failed, whatever the handler said
            name, error = "failed", "timed out"
    span.set_attribute("brooq.outcome", name)
    if exc is not None and not isinstance(exc, HandlerSignal):
        span.record_exception(exc)
    if name == "failed":
        span.set_status(otel.trace.Status(otel.trace.StatusCode.ERROR, error))


def attempt(t: Any, job: Job, fn: Callable[[Job], Any],
            failed: Callable[[BaseException], Outcome]) -> Outcome:
    """Run a sync handler in the attempt's CONSUMER span (a child of the enqueue's)."""
    with _start_process(t, job) as span:
        exc: BaseException | None = None
        try:
            outcome = of_return(fn(job))
        except BaseException as e:  # noqa: BLE001 (a handler never kills the worker)
            exc = e
            outcome = failed(e)
        _ended(span, job, outcome, exc)
        return outcome


async def attempt_async(t: Any, job: Job, fn: Callable[[Job], Any],
                        failed: Callable[[BaseException], Outcome]) -> Outcome:
    """attempt() for async handlers (the span is current in the handler's task)."""
    with _start_process(t, job) as span:
        exc: BaseException | None = None
        try:
            result: Awaitable[Any] = fn(job)
            outcome = of_return(await result)
        except BaseException as e:  # noqa: BLE001 (a handler never kills the worker)
            exc = e
            outcome = failed(e)
        _ended(span, job, outcome, exc)
        return outcome
