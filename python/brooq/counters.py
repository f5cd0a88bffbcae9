"""What a worker counted, by topic: one store that the snapshot and Prometheus both read.

The loop thread is the only writer (plain int additions, no lock). Worker.snapshot()
and a Prometheus scrape (Counters is a collector of the worker's registry) read the
same numbers from other threads; every topic's slots exist from registration on,
so a reader never sees a dict change size.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector

from brooq.outcome import SETTLED_AS, SettledAs
from brooq.snapshot import TopicSnapshot


class TopicCounters:
    """The counts of one topic since the worker started."""

    __slots__ = ("claimed", "hung", "lease_lost", "settled")

    def __init__(self) -> None:
        self.claimed = 0
        self.settled: dict[SettledAs, int] = dict.fromkeys(SETTLED_AS, 0)
        self.lease_lost = 0
        self.hung = 0

    def snapshot(self) -> TopicSnapshot:
        s = self.settled
        return TopicSnapshot(claimed=self.claimed, done=s["done"], failed=s["failed"],
                             retried=s["delay"] + s["preserve"], dead=s["dead"],
                             canceled=s["cancel"], lease_lost=self.lease_lost, hung=self.hung)


class Counters(Collector):
    """The counts of every registered topic; a Prometheus collector of them."""

    def __init__(self) -> None:
        self.topics: dict[str, TopicCounters] = {}

    def add_topic(self, topic: str) -> TopicCounters:
        counters = self.topics[topic] = TopicCounters()
        return counters

    def __getitem__(self, topic: str) -> TopicCounters:
        return self.topics[topic]

    def collect(self) -> Iterator[Metric]:
        claimed = CounterMetricFamily("brooq_jobs_claimed", "Jobs claimed by this worker.",
                                      labels=["topic"])
        settled = CounterMetricFamily(
            "brooq_jobs_settled",
            f"Attempts settled by this worker, by outcome ({', '.join(SETTLED_AS[:-1])}; "
            "dead when the database made the failure final).", labels=["topic", "outcome"])
        lease_lost = CounterMetricFamily("brooq_lease_lost",
                                         "Attempts whose lease was lost (canceled, reaped).",
                                         labels=["topic"])
        hung = CounterMetricFamily("brooq_hung_handlers",
                                   "Handlers still running hung_grace after being told to stop.",
                                   labels=["topic"])
        for topic, c in list(self.topics.items()):
            claimed.add_metric([topic], c.claimed)
            for outcome, n in c.settled.items():
                settled.add_metric([topic, outcome], n)
            lease_lost.add_metric([topic], c.lease_lost)
            hung.add_metric([topic], c.hung)
        yield from (claimed, settled, lease_lost, hung)
