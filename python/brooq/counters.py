"""What a worker counted, by topic: one store that the snapshot and Prometheus both read.

Besides the counts: ``busy``, the handlers of a topic running now (the
brooq_topic_busy_slots{topic} gauge; their sum is brooq_busy_slots); the handlers' run
times as bucket counts (brooq_attempt_duration_seconds); and, for the whole worker,
``slots`` (its concurrency) and ``reaped`` (expired leases it returned to the queue).

The loop thread is the only writer (plain int additions, no lock). Worker.snapshot()
and a Prometheus scrape (brooq.metrics collects them, when prometheus-client is
installed) read the same numbers from other threads; every topic's slots exist from
registration on, so a reader never sees a dict change size.
"""

from __future__ import annotations

from bisect import bisect_left

from brooq.snapshot import TopicSnapshot
from brooq.states import COUNTED_AS, OUTCOMES, SETTLED_COUNTS, OutcomeName

# The upper bounds (seconds) of the brooq_attempt_duration_seconds buckets.
DURATION_BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0, 1800.0)


class TopicCounters:
    """The counts of one topic since the worker started."""

    __slots__ = ("busy", "claimed", "duration_sum", "durations", "hung", "lease_lost", "settled")

    def __init__(self) -> None:
        self.busy = 0  # a gauge, not a count: handlers of the topic running now (set by the loop)
        self.claimed = 0
        self.settled: dict[OutcomeName, int] = dict.fromkeys(OUTCOMES, 0)
        self.lease_lost = 0
        self.hung = 0
        self.durations = [0] * (len(DURATION_BUCKETS) + 1)  # per bucket, not cumulative; last: +Inf
        self.duration_sum = 0.0

    def observe(self, seconds: float) -> None:
        """Count one handler's run time (a bucket count and a sum: no lock, no object)."""
        self.durations[bisect_left(DURATION_BUCKETS, seconds)] += 1
        self.duration_sum += seconds

    def snapshot(self) -> TopicSnapshot:
        counts = dict.fromkeys(SETTLED_COUNTS, 0)
        for outcome, n in self.settled.items():
            counts[COUNTED_AS[outcome]] += n
        return TopicSnapshot(claimed=self.claimed, **counts, lease_lost=self.lease_lost,
                             hung=self.hung)


class Counters:
    """The counts of every registered topic."""

    def __init__(self, slots: int = 0) -> None:
        self.topics: dict[str, TopicCounters] = {}
        self.slots = slots
        self.reaped = 0

    def add_topic(self, topic: str) -> TopicCounters:
        counters = self.topics[topic] = TopicCounters()
        return counters
