"""The claim schedule: when the worker claims next, how many jobs, from which topics.

Plain state and arithmetic on the monotonic clock, no database and no thread: the loop
(brooq.worker) tells it what happened — handlers finished (``finished``), outcomes were
written (``settled``), jobs are known to be ready (``ready``: a reconnect, a reap of
our jobs, a topic dropped), a topic went away (``drop``) — and asks it when to claim
(``claim_at``), for how many (``ask``), and reports what the claim found (``claimed``).
The rules:

- **Claim at once** when jobs are known to be ready: the last claim came back full, a
  notification came (the listener's ``claim_at``, with its quiet spells), settles were
  written after a partial claim, or the loop says so. Otherwise at the poll interval.
- **Gather.** With fewer than half the slots free and handlers running, wait while
  handlers keep finishing: each one pushes the claim GATHER_GAP later, GATHER_MAX at
  most after the first. One claim of many jobs costs about what a claim of one costs
  (a round trip).
- **How many:** the free slots (see ``free``). A claim that only settles asked for (no
  notification, the poll not due) is *capped*: each outcome written made at most one
  job ready (an ordered group's next job, a max_in_flight slot freed), and asking for
  more than is ready makes brooq.claim pass over every job of blocked ordered groups
  (its "Cost": 0.7 s a claim with 100,000 jobs in 1,000 groups).
- **After a claim:** full and not capped, claim again at once; partial, settles to come
  ask for the next one (as long as something is left whose settle could make a job
  ready); empty or partial and not capped, the next poll is due a poll interval on.
- **From which topics:** the handlers' topics, less those dropped while the run served
  them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

# Outcomes not yet written, in capacities, before they hold claims back (see free): with
# one, a batch being written and the next one's outcomes stopped the claims, and the
# database's two connections took turns; two let a claim run beside a settle, three also
# ride out a settle slowed by its commit's flush (bench/results/history.md, 1 December:
# one process's drain +10-25% with two, +8-18% more with three; 0.7 MiB more at its peak).
UNSETTLED_CAPACITIES = 3
GATHER_GAP = 0.0005  # seconds: a claim waits this long after the last finished handler...
GATHER_MAX = 0.002  # ...and at most this long after the first


@dataclass(frozen=True)
class Ask:
    """One claim about to run: how many jobs it asks for, and who asked for it."""

    count: int
    capped: bool  # only settles asked: at most one job per outcome written since the last claim
    noted: bool  # a notification asked for it
    only_notified: bool  # a notification, and nothing else that knew of ready jobs


class ClaimSchedule:
    """When to claim next, how many jobs and from which topics, for one run of a worker
    holding at most ``capacity`` jobs (running plus prefetched) and polling every
    ``poll_every`` seconds."""

    def __init__(self, capacity: int, poll_every: float) -> None:
        self.capacity = capacity
        self.poll_every = poll_every
        self.more = True  # jobs are known to be ready: claim at once (the first claim too)
        self.next_poll = 0.0  # when the poll is due (monotonic seconds)
        self.gather_from: float | None = None  # when the first handler since the last claim finished
        self.last_done = 0.0  # when the last one did
        # The last claim (not capped) came back with jobs but not full, and what it and
        # later claims took may still be settled: each settle written asks for a claim ...
        self.partial = False
        self.freed = 0  # ... of at most one job per outcome written since the last claim
        self.dropped: list[str] = []  # topics dropped while this run served them

    @property
    def half(self) -> int:
        """Below this many free slots, a claim gathers finishing handlers first."""
        return max(1, self.capacity // 2)

    def free(self, held: int, unsettled: int) -> int:
        """Slots to claim for: the capacity less the ``held`` jobs (running, prefetched),
        and less the ``unsettled`` outcomes (not yet written) beyond UNSETTLED_CAPACITIES
        capacities' worth: the settling thread's backlog holds claims back, so a database
        slow to settle slows claiming instead of piling up outcomes."""
        return self.capacity - held - max(0, unsettled - UNSETTLED_CAPACITIES * self.capacity)

    # --- what happened ---------------------------------------------------------------

    def finished(self, now: float) -> None:
        """Handlers finished at ``now``: their slots are free; gather them (see claim_at)."""
        self.last_done = now
        if self.gather_from is None:
            self.gather_from = now

    def settled(self, written: int) -> None:
        """``written`` outcomes were written. After a partial claim they may have made jobs
        ready that no enqueue notifies (an ordered group's next job, a max_in_flight slot
        freed): claim again, for at most that many."""
        if written and self.partial:
            self.freed += written
            self.more = True

    def ready(self) -> None:
        """Jobs are known to be ready (a reconnect, a reap of our jobs, a topic dropped from
        the claim): claim at once."""
        self.more = True

    def drop(self, topic: str) -> None:
        """Claim no more from ``topic`` (it no longer exists), and from the others at once."""
        self.dropped.append(topic)
        self.more = True

    def topics(self, handled: Iterable[str]) -> list[str]:
        """The topics to claim from: the handlers' less those dropped."""
        return [t for t in handled if t not in self.dropped] if self.dropped else list(handled)

    # --- the claim -------------------------------------------------------------------

    def claim_at(self, now: float, free: int, running: bool, woken: float | None) -> float | None:
        """When to claim next: None without a free slot. ``running``: handlers hold slots;
        ``woken``: when a notification asks for a claim (the listener's claim_at)."""
        if free <= 0:
            return None
        at = self.next_poll
        if self.more:
            at = now
        elif woken is not None:
            at = min(at, woken)
        if free < self.half and running and self.gather_from is not None:
            at = max(at, min(self.last_done + GATHER_GAP, self.gather_from + GATHER_MAX))
        return at

    def ask(self, now: float, free: int, noted: bool) -> Ask:
        """The claim to run now, for ``free`` slots; ``noted``: a notification asked (the
        listener's take)."""
        capped = bool(self.freed) and not noted and now < self.next_poll
        count = min(free, self.freed) if capped else free
        return Ask(count, capped, noted, noted and not self.more)

    def claimed(self, now: float, ask: Ask, got: int, busy: bool) -> None:
        """The claim ``ask`` came back with ``got`` jobs; ``busy``: jobs held or outcomes
        not yet written before these (whose settles could make a job ready)."""
        self.gather_from = None
        self.freed = 0
        # a capped claim that came back full says nothing of what else is ready: settles
        # to come, a notification or the poll (which it leaves due) ask for the next one
        self.more = got == ask.count and not ask.capped
        if not ask.capped:
            self.partial = got < ask.count
        if not (got or busy):
            self.partial = False  # nothing left whose settle could make a job ready
        if not (self.more or ask.capped):
            self.next_poll = now + self.poll_every
