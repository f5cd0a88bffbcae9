"""A Hypothesis stateful test of brooq's SQL functions against a model of its states and
invariants (docs/architecture.md, "States and transitions" and "Invariants").

Rules call enqueue, claim, heartbeat, settle (done, failed, delay, preserve, cancel, dead),
cancel, reap and purge on a frozen clock that only the test advances (brooq.now, a
superuser's setting). After every step each row of brooq.job must equal the model's
job: state, attempts, lease token, holder, lease deadline, available_at and updated_at.
Lease tokens always come from claim's result; settles and heartbeats with stale tokens
(of older claims, or of another worker) are part of the game and must change nothing.
The poison pill is modelled too: the topic's max_lease_losses (2 here, so that runs
reach it) reaps in a row make a job dead; a settle that writes an outcome resets the
count (lease_losses, compared after every step as well); a claim takes at most one
job that has lost its lease.

The only thing the model does not predict is the backoff's jitter: a failed attempt's
available_at is read back and checked to lie in [d/2, d] (docs/architecture.md, Backoff).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)

Conn = psycopg.Connection[tuple[Any, ...]]

TOPIC = "model"
MAX_ATTEMPTS = 3
MAX_LEASE_LOSSES = 2
BACKOFF_BASE = timedelta(seconds=10)
BACKOFF_MAX = timedelta(seconds=40)
RETENTION = timedelta(hours=1)
EPOCH = datetime(2030, 1, 1, tzinfo=UTC)
TERMINAL = {"done", "dead", "canceled"}
WORKERS = st.sampled_from(["wa", "wb"])
LEASES = st.integers(min_value=5, max_value=60).map(lambda s: timedelta(seconds=s))


@dataclass
class Job:
    id: int
    priority: int
    available_at: datetime
    updated_at: datetime
    state: str = "pending"
    attempts: int = 0
    token: int = 0
    locked_by: str | None = None
    locked_until: datetime | None = None
    lease_losses: int = 0
    verdict: bool = False  # made dead at once by the outcome dead (the model's own note)

    def release(self, now: datetime) -> None:
        self.locked_by = None
        self.locked_until = None
        self.updated_at = now


@dataclass(frozen=True)
class Claim:
    job_id: int
    worker: str
    token: int


def backoff(attempt: int) -> timedelta:
    d: timedelta = BACKOFF_BASE * 2 ** max(attempt - 1, 0)
    return min(d, BACKOFF_MAX)


def make_machine(conn: Conn) -> type[RuleBasedStateMachine]:
    class Queue(RuleBasedStateMachine):
        claims = Bundle("claims")
        jobs_ = Bundle("jobs")

        def __init__(self) -> None:
            super().__init__()
            self.now = EPOCH
            self.jobs: dict[int, Job] = {}
            conn.execute("delete from brooq.job")
            # The jitter is the session's random(): seeded, each example draws the same
            # delays whenever Hypothesis replays it, so which jobs a later claim finds
            # ready (and the claims bundle) is the same too; unseeded, a replay can find
            # another number of claims, and Hypothesis reports FlakyStrategyDefinition.
            conn.execute("select setseed(0.5)")
            self.freeze()

        def freeze(self) -> None:
            conn.execute("select set_config('brooq.now', %s, false)", [self.now.isoformat()])

        @initialize()
        def topic(self) -> None:
            conn.execute("select brooq.declare_topic(name => %s, max_attempts => %s, backoff_base => %s,"
                         " backoff_max => %s, retention => %s, max_lease_losses => %s)",
                         [TOPIC, MAX_ATTEMPTS, BACKOFF_BASE, BACKOFF_MAX, RETENTION, MAX_LEASE_LOSSES])

        # --- the clock ------------------------------------------------------------

        @rule(seconds=st.integers(min_value=0, max_value=90))
        def advance(self, seconds: int) -> None:
            self.now += timedelta(seconds=seconds)
            self.freeze()

        # --- producer -------------------------------------------------------------

        @rule(target=jobs_, priority=st.integers(min_value=0, max_value=2),
              delay=st.integers(min_value=0, max_value=30))
        def enqueue(self, priority: int, delay: int) -> int:
            row = conn.execute("select id, created from brooq.enqueue(topic => %s, payload => '{}',"
                               " priority => %s, delay => %s)",
                               [TOPIC, priority, timedelta(seconds=delay)]).fetchone()
            assert row is not None and row[1] is True
            self.jobs[row[0]] = Job(row[0], priority, self.now + timedelta(seconds=delay), self.now)
            return int(row[0])

        # --- worker ---------------------------------------------------------------

        @rule(target=claims, worker=WORKERS, max_jobs=st.integers(min_value=1, max_value=3), lease=LEASES)
        def claim(self, worker: str, max_jobs: int, lease: timedelta) -> Any:
            def order(j: Job) -> tuple[int, datetime, int]:
                return (-j.priority, j.available_at, j.id)

            candidates = sorted((j for j in self.jobs.values()
                                 if j.state in ("pending", "failed") and j.available_at <= self.now), key=order)
            # at most one job that lost its lease per claim (the poison pill's neighbours)
            fresh = [j for j in candidates if j.lease_losses == 0][:max_jobs]
            suspect = [j for j in candidates if j.lease_losses > 0][:1]
            ready = sorted(fresh + suspect, key=order)[:max_jobs]
            rows = conn.execute("select id, attempt, lease_token, locked_until from brooq.claim("
                                "worker => %s, topics => array[%s], max_jobs => %s, lease => %s)",
                                [worker, TOPIC, max_jobs, lease]).fetchall()
            assert sorted(r[0] for r in rows) == sorted(j.id for j in ready)
            got = {r[0]: r for r in rows}
            # the lease token is random (unguessable: docs/architecture.md, Leases): one per claim
            # call, never the job's previous one
            assert len({r[2] for r in rows}) <= 1
            for j in ready:
                assert got[j.id][2] != j.token, "a claim must give a new lease token"
                j.state, j.attempts, j.token = "processing", j.attempts + 1, got[j.id][2]
                j.locked_by, j.locked_until, j.updated_at = worker, self.now + lease, self.now
            for j in ready:
                assert got[j.id][1:] == (j.attempts, j.token, j.locked_until)
            return multiple(*(Claim(j.id, worker, j.token) for j in ready))

        def holds(self, c: Claim) -> bool:
            j = self.jobs.get(c.job_id)
            return j is not None and j.state == "processing" and j.locked_by == c.worker \
                and j.token == c.token

        @rule(c=claims, lease=LEASES, as_other=st.booleans())
        def heartbeat(self, c: Claim, lease: timedelta, as_other: bool) -> None:
            worker = ("wb" if c.worker == "wa" else "wa") if as_other else c.worker
            claim = Claim(c.job_id, worker, c.token)
            rows = conn.execute("select * from brooq.heartbeat(worker => %s, job_ids => array[%s::bigint],"
                                " lease => %s, lease_tokens => array[%s::bigint])",
                                [worker, c.job_id, lease, c.token]).fetchall()
            held = self.holds(claim)
            assert [r[0] for r in rows] == ([c.job_id] if held else [])
            if held:
                self.jobs[c.job_id].locked_until = self.now + lease

        @rule(c=claims, outcome=st.sampled_from(["done", "failed", "delay", "preserve", "cancel", "dead"]),
              delay=st.none() | st.integers(min_value=0, max_value=100))
        def settle(self, c: Claim, outcome: str, delay: int | None) -> None:
            if outcome == "delay" and delay is None:
                delay = 5
            d = None if delay is None else timedelta(seconds=delay)
            row = conn.execute("select brooq.settle(job_id => %s, worker => %s, lease_token => %s,"
                               " outcome => %s, error => 'boom', delay => %s)",
                               [c.job_id, c.worker, c.token, outcome, d]).fetchone()
            assert row is not None
            if not self.holds(c):
                assert row[0] is None  # a lost lease: nothing written
                return
            j = self.jobs[c.job_id]
            j.release(self.now)
            j.lease_losses = 0  # an outcome was written: no poison pill
            if outcome == "done":
                j.state = "done"
            elif outcome == "cancel":
                j.state = "canceled"
            elif outcome == "preserve":
                j.state, j.attempts = "failed", max(j.attempts - 1, 0)
                j.available_at = self.now + min(d if d is not None else BACKOFF_BASE, BACKOFF_MAX)
            elif outcome == "dead":
                j.state, j.verdict = "dead", True  # at once, whatever attempts are left
            else:
                # failed or delay: on the last attempt the job is dead, and its available_at
                # says when a retry would have come (settle_many computes it either way)
                j.state = "dead" if j.attempts >= MAX_ATTEMPTS else "failed"
                if outcome == "delay":
                    assert d is not None
                    j.available_at = self.now + min(d, BACKOFF_MAX)
                else:
                    at = self.db_row(j.id)["available_at"]
                    b = backoff(j.attempts)
                    assert self.now + b / 2 <= at <= self.now + b, (at - self.now, b)
                    j.available_at = at
            assert row[0] == j.state

        # --- admin and maintenance ------------------------------------------------

        @rule(job_id=jobs_)
        def cancel(self, job_id: int) -> None:
            row = conn.execute("select brooq.cancel(job_id => %s)", [job_id]).fetchone()
            j = self.jobs.get(job_id)
            expected = j is not None and j.state not in TERMINAL
            assert row is not None and row[0] is expected
            if j is not None and expected:
                j.state = "canceled"
                j.release(self.now)

        @rule()
        def reap(self) -> None:
            rows = conn.execute("select id, topic from brooq.reap()").fetchall()
            expired = [j for j in self.jobs.values()
                       if j.state == "processing" and j.locked_until is not None and j.locked_until < self.now]
            assert sorted(r[0] for r in rows) == sorted(j.id for j in expired)
            for j in expired:
                j.lease_losses += 1  # attempts unchanged (invariant 6)
                if j.lease_losses >= MAX_LEASE_LOSSES:
                    j.state = "dead"  # the poison pill (invariant 7); available_at kept
                else:
                    j.state, j.available_at = "pending", self.now
                j.release(self.now)

        @rule(worker=WORKERS, max_jobs=st.integers(min_value=1, max_value=3), lease=LEASES)
        def crash(self, worker: str, max_jobs: int, lease: timedelta) -> None:
            """A worker claims and dies: its lease runs out, a reaper comes (the poison
            pill's path, made likely: several crashes of one job in a row)."""
            self.claim(worker, max_jobs, lease)
            self.advance(int(lease.total_seconds()) + 1)
            self.reap()

        @rule()
        def purge(self) -> None:
            row = conn.execute("select brooq.purge()").fetchone()
            due = [j for j in self.jobs.values() if j.state in TERMINAL and j.updated_at < self.now - RETENTION]
            assert row is not None and row[0] == len(due)
            for j in due:
                del self.jobs[j.id]

        # --- the check after every step -------------------------------------------

        def db_row(self, job_id: int) -> dict[str, Any]:
            cur = conn.execute("select * from brooq.job where id = %s", [job_id])
            names = [d.name for d in cur.description or []]
            row = cur.fetchone()
            assert row is not None
            return dict(zip(names, row, strict=True))

        @invariant()
        def rows_match_the_model(self) -> None:
            cur = conn.execute("select id, state, attempts, lease_token, locked_by, locked_until,"
                               " available_at, updated_at, lease_losses from brooq.job order by id")
            rows = {r[0]: r[1:] for r in cur.fetchall()}
            assert set(rows) == set(self.jobs)
            for j in self.jobs.values():
                expected = (j.state, j.attempts, j.token, j.locked_by, j.locked_until, j.available_at,
                            j.updated_at, j.lease_losses)
                assert rows[j.id] == expected, (j.id, rows[j.id], expected)
                # invariant 7: a failure on the last attempt, the poison pill, or
                # the outcome dead
                assert j.state != "dead" or j.attempts >= MAX_ATTEMPTS or j.lease_losses >= MAX_LEASE_LOSSES \
                    or j.verdict

        def teardown(self) -> None:
            conn.execute("reset brooq.now")

    return Queue


def multiple(*values: Claim) -> Any:
    from hypothesis.stateful import multiple as many
    return many(*values)


def test_the_sql_functions_follow_the_state_machine(conn: Conn) -> None:
    machine = make_machine(conn)
    run_state_machine_as_test(machine, settings=settings(
        max_examples=200, stateful_step_count=50, deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]))
