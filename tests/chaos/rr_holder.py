"""Fault 9: a REPEATABLE READ transaction held open while jobs flow.

A transaction's snapshot holds back the xmin horizon: no row version it might see
can be vacuumed, and no index entry pointing at one can be marked dead. In a
SKIP LOCKED queue the claim index's head fills with entries of jobs already claimed
and settled; every claim walks over them (a heap visit each) before it finds a
ready job. This measures how much that costs brooq:

    .venv/bin/python tests/chaos/rr_holder.py DSN --clean 30 --hold 300 --after 60

A producer enqueues ``rate`` jobs/s (enqueue_many, 100 a call); two consumers claim
200 at a time and settle them done (settle_many), as fast as they can; after
``clean`` seconds a REPEATABLE READ transaction takes a snapshot and holds it for
``hold`` seconds, then commits; the run goes on ``after`` seconds more. Per phase:
jobs settled per second, claim latency (p50, p99), the ready backlog at its end, and
an EXPLAIN (ANALYZE, BUFFERS) of claim's scan at its end.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from dataclasses import dataclass, field

import brooq
import psycopg

TOPIC = "rr"
SCAN = """explain (analyze, buffers, costs off, timing off)
select j.id from brooq.job j
 where j.state in ('pending', 'failed') and j.topic = 'rr' and j.available_at <= now()
   and j.lease_losses = 0
 order by j.priority desc, j.available_at, j.id limit 200 for no key update skip locked"""


@dataclass
class Phase:
    name: str
    start: float
    end: float
    settled: int = 0
    latencies: list[float] = field(default_factory=list)
    backlog: int = 0
    explain: str = ""

    @property
    def rate(self) -> float:
        return self.settled / max(self.end - self.start, 1e-9)

    def line(self) -> str:
        lat = sorted(self.latencies) or [0.0]
        p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))]
        return (f"{self.name:>10}: {self.rate:7.0f} jobs/s settled, claim p50 "
                f"{statistics.median(lat) * 1000:6.1f} ms p99 {p99 * 1000:7.1f} ms, "
                f"backlog at end {self.backlog}")


@dataclass
class Result:
    phases: dict[str, Phase]

    def share(self, name: str) -> float:
        return self.phases[name].rate / max(self.phases["clean"].rate, 1e-9)

    def latency_ratio(self, name: str) -> float:
        def p50(p: Phase) -> float:
            return statistics.median(p.latencies or [0.0])
        return p50(self.phases[name]) / max(p50(self.phases["clean"]), 1e-9)

    def summary(self) -> str:
        lines = [p.line() for p in self.phases.values()]
        lines.append(f"share of the clean rate: during {self.share('during'):.2f}, "
                     f"first 60 s after {self.share('after_60s'):.2f}; claim p50 x"
                     f"{self.latency_ratio('during'):.1f} during, x{self.latency_ratio('after_60s'):.1f} after")
        for p in self.phases.values():
            if p.explain:
                lines.append(f"--- EXPLAIN at the end of {p.name}:\n{p.explain}")
        return "\n".join(lines)


def measure(dsn: str, clean: float = 30, hold: float = 300, after: float = 60,
            rate: float = 2000) -> Result:
    with psycopg.connect(dsn, autocommit=True) as conn:
        brooq.declare_topic(conn, TOPIC, notify=False)
    t0 = time.monotonic() + 2.0  # consumers and producer warm up
    phases = {
        "clean": Phase("clean", t0 + 5, t0 + clean),
        "during": Phase("during", t0 + clean, t0 + clean + hold),
        "after_60s": Phase("after_60s", t0 + clean + hold, t0 + clean + hold + min(after, 60)),
    }
    end = t0 + clean + hold + after
    lock = threading.Lock()
    stop = threading.Event()

    def phase_of(t: float) -> Phase | None:
        for p in phases.values():
            if p.start <= t < p.end:
                return p
        return None

    def produce() -> None:
        with psycopg.connect(dsn, autocommit=True) as conn:
            batch = 100
            every = batch / rate
            next_at = time.monotonic()
            while not stop.is_set():
                brooq.enqueue_many(conn, TOPIC, [{}] * batch)
                next_at += every
                time.sleep(max(0.0, next_at - time.monotonic()))

    def consume(i: int) -> None:
        with psycopg.connect(dsn, autocommit=True) as conn:
            while not stop.is_set():
                a = time.monotonic()
                rows = conn.execute("select id, lease_token from brooq.claim(%s, array[%s], 200, '30 s')",
                                    [f"c{i}", TOPIC]).fetchall()
                b = time.monotonic()
                if rows:
                    conn.execute("select count(*) from brooq.settle_many(%s, %s, %s, %s)",
                                 [f"c{i}", [r[0] for r in rows], [r[1] for r in rows],
                                  ["done"] * len(rows)])
                c = time.monotonic()
                with lock:
                    p = phase_of(b)
                    if p is not None:
                        p.latencies.append(b - a)
                    q = phase_of(c)
                    if q is not None:
                        q.settled += len(rows)
                if not rows:
                    time.sleep(0.005)

    def observe(p: Phase) -> None:
        time.sleep(max(0.0, p.end - time.monotonic() - 0.5))
        with psycopg.connect(dsn, autocommit=True) as conn:
            row = conn.execute("select count(*) from brooq.job where topic = %s and state = 'pending'",
                               [TOPIC]).fetchone()
            p.backlog = int(row[0]) if row else 0
            with conn.transaction(force_rollback=True):
                p.explain = "\n".join(r[0] for r in conn.execute(SCAN).fetchall())

    def holder() -> None:
        time.sleep(max(0.0, phases["during"].start - time.monotonic()))
        with psycopg.connect(dsn) as conn:
            conn.execute("set transaction isolation level repeatable read")
            conn.execute("select count(*) from brooq.topic")  # the snapshot is taken here
            time.sleep(max(0.0, phases["during"].end - time.monotonic()))
            conn.commit()

    threads = [threading.Thread(target=produce, daemon=True),
               threading.Thread(target=holder, daemon=True),
               *(threading.Thread(target=consume, args=(i,), daemon=True) for i in range(2)),
               *(threading.Thread(target=observe, args=(p,), daemon=True) for p in phases.values())]
    for t in threads:
        t.start()
    time.sleep(max(0.0, end - time.monotonic()))
    stop.set()
    for t in threads:
        t.join(timeout=30)
    return Result(phases)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dsn")
    parser.add_argument("--clean", type=float, default=30)
    parser.add_argument("--hold", type=float, default=300)
    parser.add_argument("--after", type=float, default=60)
    parser.add_argument("--rate", type=float, default=2000)
    a = parser.parse_args()
    print(measure(a.dsn, a.clean, a.hold, a.after, a.rate).summary())


if __name__ == "__main__":
    main()
