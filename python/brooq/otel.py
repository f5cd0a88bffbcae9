"""The application's OpenTelemetry, when it has one: brooq never imports it itself.

An application that configured tracing has imported opentelemetry, so one look at
``sys.modules`` decides (see brooq.tracing, which makes the spans); without it this
module imports nothing. Here too is what a chained job carries: the current span's
trace context (Job.chain).
"""

from __future__ import annotations

import sys
from typing import Any

_TRACER_NAME = "brooq"


class Api:
    """The opentelemetry names brooq uses, resolved once the application imported it."""

    def __init__(self) -> None:
        from opentelemetry import trace
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

        self.trace = trace
        self.propagator = TraceContextTextMapPropagator()
        self.unset = (trace.ProxyTracerProvider, trace.NoOpTracerProvider)
        self.provider: Any = None
        self.tracer: Any = None

    def get_tracer(self) -> Any:
        provider = self.trace.get_tracer_provider()
        if isinstance(provider, self.unset):
            return None  # opentelemetry imported, no provider configured: no spans
        if provider is not self.provider:
            from brooq._version import __version__

            self.tracer = provider.get_tracer(_TRACER_NAME, __version__)
            self.provider = provider
        return self.tracer


_api: Api | None = None


def api() -> Api | None:
    """The opentelemetry names once the application imported it, else None."""
    global _api
    if _api is None:
        if "opentelemetry.trace" not in sys.modules:
            return None  # never imported by the application: no tracing, no import
        try:
            _api = Api()
        except ImportError:  # a partial install: behave as without it
            return None
    return _api


def tracer() -> Any:
    """The tracer when tracing is on (see brooq.tracing), else None."""
    found = _api if _api is not None else api()
    return None if found is None else found.get_tracer()


def current_context() -> dict[str, str] | None:
    """The current span's W3C trace context (traceparent, tracestate), or None: what a
    chained job carries (Job.chain, called in the attempt's span)."""
    found = _api if _api is not None else api()
    if found is None or found.get_tracer() is None:
        return None
    carrier: dict[str, str] = {}
    found.propagator.inject(carrier)
    return carrier or None
