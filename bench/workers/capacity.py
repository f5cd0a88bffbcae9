"""A worker's capacity: at most so many handler starts a second, for the pressure
bench's overload (a consumer slower than the producer, the same for every system).

`Capacity(per_second).admit()` waits for the next slot of a 1/per_second schedule
before a handler starts. A loop that paused (to claim, to settle, to wait for work)
may catch up on at most CREDIT seconds of slots, so that a serial loop (claim, run
the batch, settle: brooq's SQL loop, PgQue's) gets the same capacity as one that
fetches while its handlers wait (graphile-worker's), and an idle consumer cannot
start a large burst at once. `Capacity(None)` admits at once.
"""

from __future__ import annotations

import time

CREDIT = 0.25  # seconds of slots a paused loop may catch up on


class Capacity:
    def __init__(self, per_second: float | None) -> None:
        self.gap = 1.0 / per_second if per_second else 0.0
        self.next = 0.0

    def admit(self) -> None:
        if not self.gap:
            return
        now = time.monotonic()
        slot = max(now - CREDIT, self.next)
        self.next = slot + self.gap
        if slot > now:
            time.sleep(slot - now)
