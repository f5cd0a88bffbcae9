"""What a worker counted, by topic: one store that the snapshot and Prometheus both read.

Besides the counts, one gauge: ``busy``, the handlers of a topic running now (the
brooq_topic_busy_slots{topic} gauge; their sum is brooq_busy_slots).

The loop thread is the only writer (plain int additions, no lock). Worker.snapshot()
and a Prometheus scrape (brooq.metrics collects them, when prometheus-client is
installed) read the same numbers from other threads; every topic's slots exist from
registration on, so a reader never sees a dict change size.
"""

from __future__ import annotations

from brooq.outcome import OUTCOMES, OutcomeName
from brooq.snapshot import TopicSnapshot


class TopicCounters:
    """The counts of one topic since the worker started."""

    __slots__ = ("busy", "claimed", "hung", "lease_lost", "settled")

    def __init__(self) -> None:
        self.busy = 0  # a gauge, not a count: handlers of the topic running now (set by the loop)
        self.claimed = 0
        self.settled: dict[OutcomeName, int] = dict.fromkeys(OUTCOMES, 0)
        self.lease_lost = 0
        self.hung = 0

    def snapshot(self) -> TopicSnapshot:
        s = self.settled
        return TopicSnapshot(claimed=self.claimed, done=s["done"], failed=s["failed"],
                             retried=s["delay"] + s["preserve"], dead=s["dead"],
                             canceled=s["cancel"], lease_lost=self.lease_lost, hung=self.hung)


class Counters:
    """The counts of every registered topic."""

    def __init__(self) -> None:
        self.topics: dict[str, TopicCounters] = {}

    def add_topic(self, topic: str) -> TopicCounters:
        counters = self.topics[topic] = TopicCounters()
        return counters

    def __getitem__(self, topic: str) -> TopicCounters:
        return self.topics[topic]

    def busy(self) -> int:
        """Handlers running now, every topic (the brooq_busy_slots gauge)."""
        return sum(c.busy for c in list(self.topics.values()))
