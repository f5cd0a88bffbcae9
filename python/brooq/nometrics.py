"""The worker's metrics when prometheus-client is not installed: nothing is recorded.

prometheus-client is the extra `metrics` (brooq.extras says how to install it); a producer-only
application, or a worker without a metrics_address, does not need it. NoMetrics
has the attributes of brooq.metrics.Metrics that the worker touches, each one a
sink. The worker's own counts (brooq.counters: Worker.snapshot(), the progress line)
do not depend on it.
"""

from __future__ import annotations

from typing import Any

from brooq.extras import install_hint


def hint() -> str:
    """How to install prometheus-client."""
    return "install the extra metrics (prometheus-client): " + install_hint("metrics")


def available() -> bool:
    """Whether prometheus-client can be imported."""
    try:
        import prometheus_client  # noqa: F401
    except ImportError:
        return False
    return True


class Sink:
    """A gauge (or one of its labelled series) that records nothing: Metrics' families
    other than its gauges are read from brooq.counters, which count without it."""

    def labels(self, *values: str) -> Sink:
        return self

    def set(self, value: float) -> None:
        pass


class NoMetrics:
    """brooq.metrics.Metrics without prometheus-client: every family is a Sink."""

    def __init__(self) -> None:
        self.jobs = self.oldest_ready_age = self.held = Sink()

    def declare_topic(self, topic: str) -> None:
        pass

    def refresh_stats(self, conn: Any, topics: list[str]) -> None:
        pass
