"""Prometheus metrics of one worker, and the small HTTP server that exposes them.

prometheus-client is the extra `metrics` (brooq.extras says how to install it): without it the worker
counts in brooq.nometrics.NoMetrics instead, and a metrics_address is refused at start.

Each worker has its own CollectorRegistry (several workers may live in one
process, as in the tests). The server answers:
  /metrics  the Prometheus text format
  /healthz  200 "ok" when the worker's database connection is up and its loop ran
            recently, 503 with the reason otherwise
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, NamedTuple

import psycopg
from prometheus_client import CollectorRegistry, Gauge
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.registry import Collector
from psycopg.rows import class_row

from brooq import queries
from brooq.counters import DURATION_BUCKETS, Counters
from brooq.rows import TopicStats
from brooq.states import GAUGED, HELD_BY, OUTCOMES


class CountersCollector(Collector):
    """The worker's Counters, read at each scrape: claimed, settled, lease lost, hung (by
    topic) and reaped as Prometheus counters, the handlers' run times as a histogram,
    busy slots (by topic, and their sum) and slots as gauges."""

    def __init__(self, counters: Counters) -> None:
        self.counters = counters

    def collect(self) -> Iterator[Metric]:
        claimed = CounterMetricFamily("brooq_jobs_claimed", "Jobs claimed by this worker.",
                                      labels=["topic"])
        settled = CounterMetricFamily(
            "brooq_jobs_settled",
            f"Attempts settled by this worker, by outcome ({', '.join(OUTCOMES)}; "
            "dead also when the database made a failure on the last attempt final).",
            labels=["topic", "outcome"])
        lease_lost = CounterMetricFamily("brooq_lease_lost",
                                         "Attempts whose lease was lost (canceled, reaped).",
                                         labels=["topic"])
        hung = CounterMetricFamily("brooq_hung_handlers",
                                   "Handlers still running hung_grace after being told to stop.",
                                   labels=["topic"])
        busy = GaugeMetricFamily("brooq_topic_busy_slots", "Handlers of the topic running now.",
                                 labels=["topic"])
        duration = HistogramMetricFamily("brooq_attempt_duration_seconds", "Run time of handlers.",
                                         labels=["topic"])
        busy_total = 0
        for topic, c in list(self.counters.topics.items()):
            cumulative, buckets = 0, []
            for bound, n in zip((*map(str, DURATION_BUCKETS), "+Inf"), list(c.durations), strict=True):
                cumulative += n
                buckets.append((bound, cumulative))
            duration.add_metric([topic], buckets, c.duration_sum)
            n = c.busy
            busy.add_metric([topic], n)
            busy_total += n
            claimed.add_metric([topic], c.claimed)
            for outcome, n in c.settled.items():
                settled.add_metric([topic, outcome], n)
            lease_lost.add_metric([topic], c.lease_lost)
            hung.add_metric([topic], c.hung)
        yield GaugeMetricFamily("brooq_busy_slots", "Handlers running now (every topic).",
                                value=busy_total)
        yield GaugeMetricFamily("brooq_slots", "Concurrency of this worker.", value=self.counters.slots)
        yield CounterMetricFamily("brooq_jobs_reaped", "Expired leases this worker returned to the queue.",
                                  value=self.counters.reaped)
        yield from (busy, claimed, settled, lease_lost, hung, duration)


class RetentionCollector(Collector):
    """What retention did per topic (brooq.retention_stats), as Prometheus counters: the
    counts live in the database (brooq.purge and brooq.purge_all write them, from any
    process or pg_cron), so every worker of a topic exports the same numbers; the
    worker reads them with the depth gauges (stats_interval) and a scrape shows the
    last reading."""

    def __init__(self) -> None:
        self.counts: dict[str, tuple[int, int]] = {}  # topic -> (deleted, remainders)

    def collect(self) -> Iterator[Metric]:
        deleted = CounterMetricFamily(
            "brooq_retention_deleted",
            "Terminal jobs deleted by retention (brooq.purge, purge_all), from brooq.retention_stats.",
            labels=["topic"])
        remainder = CounterMetricFamily(
            "brooq_retention_remainder",
            "purge_all runs that stopped at max_batches with jobs of the topic still due "
            "(from brooq.retention_stats).", labels=["topic"])
        for topic, (d, r) in list(self.counts.items()):
            deleted.add_metric([topic], d)
            remainder.add_metric([topic], r)
        yield from (deleted, remainder)


class RetentionRow(NamedTuple):
    """One row of queries.RETENTION_STATS_OF."""

    topic: str
    deleted: int
    remainders: int


class Metrics:
    """The metric families of a worker, in their own registry. What the worker counts
    itself is read from its Counters at each scrape; the depth gauges and retention
    counters are set from the database (refresh_stats)."""

    def __init__(self, counters: Counters) -> None:
        r = self.registry = CollectorRegistry(auto_describe=True)
        r.register(CountersCollector(counters))
        self.retention = RetentionCollector()
        r.register(self.retention)
        self.jobs = Gauge("brooq_jobs", "Jobs by topic and state (from brooq.topic_stats).",
                          ["topic", "state"], registry=r)
        self.held = Gauge("brooq_jobs_held",
                          "Ready jobs a flow limit of the topic keeps from being claimed now (from "
                          f"brooq.topic_stats: {', '.join('held_by_' + h for h in HELD_BY)}).",
                          ["topic", "limit"], registry=r)
        self.oldest_ready_age = Gauge("brooq_oldest_ready_age_seconds",
                                      "Age of the oldest ready job (0 when none).", ["topic"], registry=r)
        for topic in list(counters.topics):
            self.declare_topic(topic)

    def declare_topic(self, topic: str) -> None:
        """Create the labelled series of a topic at zero, so they show before the first job."""
        for state in GAUGED:
            self.jobs.labels(topic, state)
        for limit in HELD_BY:
            self.held.labels(topic, limit)
        self.oldest_ready_age.labels(topic)
        self.retention.counts.setdefault(topic, (0, 0))

    def refresh_stats(self, conn: psycopg.Connection[Any], topics: list[str]) -> None:
        """Set the depth and lag gauges of these topics from brooq.topic_stats, and the
        retention counters from brooq.retention_stats."""
        cur = conn.cursor(row_factory=class_row(TopicStats))
        rows = [r for t in topics for r in cur.execute(queries.TOPIC_STATS_OF, [t])]
        for r in rows:
            for state in GAUGED:
                self.jobs.labels(r.topic, state).set(getattr(r, state))
            for limit in HELD_BY:
                self.held.labels(r.topic, limit).set(getattr(r, f"held_by_{limit}"))
            age = r.oldest_ready_age
            self.oldest_ready_age.labels(r.topic).set(0.0 if age is None else age.total_seconds())
        kept = conn.cursor(row_factory=class_row(RetentionRow))
        for k in kept.execute(queries.RETENTION_STATS_OF, [topics]):
            self.retention.counts[k.topic] = (k.deleted, k.remainders)


class _Server(ThreadingHTTPServer):
    daemon_threads = True


class _Server6(_Server):
    address_family = socket.AF_INET6


class MetricsServer:
    """A threaded HTTP server for /metrics and /healthz, in a daemon thread."""

    def __init__(self, metrics: Metrics, health: Callable[[], str | None], host: str, port: int) -> None:
        registry = metrics.registry

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                if path == "/metrics":
                    self._send(200, generate_latest(registry), CONTENT_TYPE_LATEST)
                elif path == "/healthz":
                    problem = health()
                    if problem is None:
                        self._send(200, b"ok\n", "text/plain; charset=utf-8")
                    else:
                        self._send(503, f"unhealthy: {problem}\n".encode(), "text/plain; charset=utf-8")
                else:
                    self._send(404, b"not found: try /metrics or /healthz\n", "text/plain; charset=utf-8")

            def _send(self, code: int, body: bytes, content_type: str) -> None:
                self.send_response(code)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass  # scrapes every 15 s are not news

        server_class = _Server6 if ":" in host else _Server
        self._server = server_class((host, port), Handler)
        self.host = host
        self.port = int(self._server.server_address[1])
        self._thread = threading.Thread(target=self._server.serve_forever, name="brooq-metrics",
                                        daemon=True)

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
