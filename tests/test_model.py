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

Workflows are modelled too: a job enqueued with parents (after, some of them purged,
waiting, or already ended) waits until every parent has ended, and the end of its last
parent makes it pending; under after_policy cancel a dead or canceled parent cancels it
at once, naming that parent, transitively; under run it runs all the same. A canceled
child keeps counting its parents; purge keeps a parent while a child of it has not
finished; a re-drive (retry, retry_dead) takes a parent's end back from its waiting
children and re-arms the children its end canceled only when asked, and a child
becomes pending only when every parent it has has ended (the truth, not a counter). The
edges (brooq.job_edge), parents_left, canceled_by and the workflow's last_error are
compared after every step, and the claim's parents against the model's.

A second test checks a claim from several topics (brooq.claim merges their heads in
rounds) against the same merge done here, with priorities, delays, flow caps and jobs
already in flight.

The only thing the model does not predict is the backoff's jitter: a failed attempt's
available_at is read back and checked to lie in [d/2, d] (docs/architecture.md, Backoff).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
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
BAD = {"dead", "canceled"}
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
    max_attempts: int = MAX_ATTEMPTS
    after_policy: str | None = None
    parents_left: int = 0
    canceled_by: int | None = None
    error: str | None = None  # what last_error starts with, where the model knows it

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
            self.edges: dict[tuple[int, int], bool] = {}  # (parent, child) -> settled
            conn.execute("delete from brooq.job_edge")
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

        @rule(seconds=st.integers(min_value=0, max_value=90) | st.just(int(RETENTION.total_seconds()) + 60))
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

        @rule(target=jobs_, known=st.lists(jobs_, max_size=3), fresh=st.integers(min_value=0, max_value=2),
              policy=st.sampled_from(["cancel", "run"]), priority=st.integers(min_value=0, max_value=2),
              delay=st.integers(min_value=0, max_value=30))
        def enqueue_child(self, known: list[int], fresh: int, policy: str, priority: int, delay: int) -> Any:
            """A child of jobs enqueued before (any state, purged ones too, repeated ids)
            and of `fresh` parents enqueued just now (so that it waits)."""
            new = [self.enqueue(0, 0) for _ in range(fresh or (0 if known else 1))]
            parents = known + new
            distinct = sorted(set(parents))
            missing = [p for p in distinct if p not in self.jobs]
            sql = ("select id, created from brooq.enqueue(topic => %s, payload => '{}', priority => %s,"
                   " delay => %s, after => %s, after_policy => %s)")
            args = [TOPIC, priority, timedelta(seconds=delay), parents, policy]
            if missing:
                # a purged parent: refused, nothing written (the check after this step)
                with pytest.raises(psycopg.errors.ForeignKeyViolation, match=f"parent job {missing[0]} does"):
                    conn.execute(sql, args)
                return multiple(*new)
            row = conn.execute(sql, args).fetchone()
            assert row is not None and row[1] is True
            j = Job(row[0], priority, self.now + timedelta(seconds=delay), self.now, after_policy=policy)
            ps = [self.jobs[p] for p in distinct]
            bad = next((p for p in ps if p.state in BAD), None)
            j.parents_left = sum(p.state not in TERMINAL for p in ps)
            for p in ps:
                self.edges[(p.id, j.id)] = p.state in TERMINAL
            if bad is not None and policy == "cancel":
                j.state, j.canceled_by = "canceled", bad.id
                j.error = f"parent job {bad.id} ended {bad.state} (after_policy cancel)"
            elif j.parents_left > 0:
                j.state = "waiting"
            self.jobs[j.id] = j
            return multiple(*new, j.id)

        def release(self, ends: dict[int, str]) -> None:
            """brooq._release: the end of each parent in `ends` (id -> done, dead or
            canceled) counted once per edge, in its waiting (or canceled, still counting)
            children; then the children it canceled, as parents ended canceled."""
            while ends:
                counted: dict[int, list[tuple[int, str]]] = {}
                for (parent, child), settled in sorted(self.edges.items()):
                    if parent in ends and not settled:
                        self.edges[(parent, child)] = True
                        counted.setdefault(child, []).append((parent, ends[parent]))
                next_ends: dict[int, str] = {}
                for child, got in counted.items():
                    c = self.jobs[child]
                    if not (c.state == "waiting" or c.state == "canceled" and c.parents_left > 0):
                        continue
                    bad = [(p, state) for p, state in got if state != "done"]
                    c.parents_left -= len(got)
                    if c.state != "waiting":
                        continue  # canceled meanwhile: it only counts
                    c.updated_at = self.now
                    if bad and c.after_policy == "cancel":
                        c.state, c.canceled_by = "canceled", bad[0][0]
                        c.error = f"parent job {bad[0][0]} ended {bad[0][1]} (after_policy cancel)"
                        if self.is_parent(c.id):
                            next_ends[child] = "canceled"
                    elif c.parents_left == 0:
                        # the truth, not the counter: every parent of it has ended
                        assert all(self.jobs[p].state in TERMINAL for (p, k) in self.edges
                                   if k == child and p in self.jobs), (child, self.edges)
                        c.state, c.available_at = "pending", max(c.available_at, self.now)
                ends = next_ends

        def is_parent(self, job_id: int) -> bool:
            """A job has children when an edge names it (brooq.job_edge, no column)."""
            return any(p == job_id for (p, _) in self.edges)

        def ended(self, j: Job) -> None:
            if self.is_parent(j.id) and j.state in TERMINAL:
                self.release({j.id: j.state})

        def rearm(self, parents: set[int], canceled: bool) -> None:
            """brooq._rearm: the ends of these re-driven parents taken back. Their
            waiting children (under run) count them as unfinished again; with
            `canceled` (rearm_children), each child one of them canceled is counted
            again from its parents' states, and waits unless one is dead or canceled
            (then it stays canceled, in that one's name); transitively."""
            how = "re-driven"
            while parents:
                for (parent, child), settled in sorted(self.edges.items()):
                    c = self.jobs[child]
                    if parent in parents and settled and c.state == "waiting":
                        self.edges[(parent, child)] = False
                        c.parents_left += 1
                        c.updated_at = self.now
                if not canceled:
                    return
                armed = sorted({child for (parent, child) in self.edges if parent in parents
                                and self.jobs[child].state == "canceled"
                                and self.jobs[child].canceled_by in parents})
                # one statement: the parents' states as they were before it
                states = {child: [(p, self.jobs[p].state) for (p, k) in sorted(self.edges)
                                  if k == child and p in self.jobs] for child in armed}
                waiting = set()
                for child in armed:
                    c = self.jobs[child]
                    for p, state in states[child]:
                        self.edges[(p, child)] = state in TERMINAL
                    bad = [(p, state) for p, state in states[child] if state in BAD]
                    c.parents_left = sum(state not in TERMINAL for _, state in states[child])
                    c.updated_at = self.now
                    if bad:
                        c.canceled_by = bad[0][0]
                        c.error = f"parent job {bad[0][0]} ended {bad[0][1]} (after_policy cancel)"
                    else:
                        c.error = f"re-armed: parent job {c.canceled_by} {how} by "
                        c.state, c.canceled_by = "waiting", None
                        if self.is_parent(c.id):
                            waiting.add(child)
                parents = waiting
                how = "re-armed"  # their children's parents were re-armed, not re-driven

        # --- worker ---------------------------------------------------------------

        @rule(target=claims, worker=WORKERS, max_jobs=st.integers(min_value=1, max_value=3), lease=LEASES)
        def claim(self, worker: str, max_jobs: int, lease: timedelta) -> Any:
            return multiple(*self.take(worker, max_jobs, lease))

        def take(self, worker: str, max_jobs: int, lease: timedelta) -> list[Claim]:
            def order(j: Job) -> tuple[int, datetime, int]:
                return (-j.priority, j.available_at, j.id)

            candidates = sorted((j for j in self.jobs.values()
                                 if j.state in ("pending", "failed") and j.available_at <= self.now), key=order)
            # at most one job that lost its lease per claim (the poison pill's neighbours)
            fresh = [j for j in candidates if j.lease_losses == 0][:max_jobs]
            suspect = [j for j in candidates if j.lease_losses > 0][:1]
            ready = sorted(fresh + suspect, key=order)[:max_jobs]
            rows = conn.execute("select id, attempt, lease_token, locked_until, parents from brooq.claim("
                                "worker => %s, topics => array[%s], max_jobs => %s, lease => %s)",
                                [worker, TOPIC, max_jobs, lease]).fetchall()
            assert sorted(r[0] for r in rows) == sorted(j.id for j in ready)
            got = {r[0]: r for r in rows}
            # the lease token is random (unguessable: docs/architecture.md, Leases): one per claim
            # call, never the job's previous one
            assert len({r[2] for r in rows}) <= 1
            # a child's parents as the claim's snapshot has them (a parent claimed in the
            # same call still pending), in id order; a purged parent is gone
            parents = {j.id: [(p, self.jobs[p].state) for (p, c) in sorted(self.edges) if c == j.id and p in self.jobs]
                       for j in ready}
            for j in ready:
                assert got[j.id][2] != j.token, "a claim must give a new lease token"
                j.state, j.attempts, j.token = "processing", j.attempts + 1, got[j.id][2]
                j.locked_by, j.locked_until, j.updated_at = worker, self.now + lease, self.now
            for j in ready:
                assert got[j.id][1:4] == (j.attempts, j.token, j.locked_until)
                seen = None if got[j.id][4] is None else [(p["id"], p["state"]) for p in got[j.id][4]]
                assert seen == (parents[j.id] if j.after_policy is not None and parents[j.id] else None), \
                    (j.id, seen, parents[j.id])
            return [Claim(j.id, worker, j.token) for j in ready]

        def holds(self, c: Claim) -> bool:
            j = self.jobs.get(c.job_id)
            return j is not None and j.state == "processing" and j.locked_by == c.worker \
                and j.token == c.token

        @rule(worker=WORKERS, outcomes=st.lists(st.sampled_from(["done", "done", "failed", "dead", "cancel"]),
                                               min_size=3, max_size=3))
        def work(self, worker: str, outcomes: list[str]) -> None:
            """A worker claims and settles what it claimed at once (parents that end, so
            that children wait, run or are canceled often)."""
            for c, outcome in zip(self.take(worker, 3, timedelta(seconds=30)), outcomes, strict=False):
                self.settle(c, outcome, None)

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
            j.error = None
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
                j.state = "dead" if j.attempts >= j.max_attempts else "failed"
                if outcome == "delay":
                    assert d is not None
                    j.available_at = self.now + min(d, BACKOFF_MAX)
                else:
                    at = self.db_row(j.id)["available_at"]
                    b = backoff(j.attempts)
                    assert self.now + b / 2 <= at <= self.now + b, (at - self.now, b)
                    j.available_at = at
            assert row[0] == j.state
            self.ended(j)

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
                self.ended(j)

        @rule(job_id=jobs_, rearm=st.booleans())
        def retry(self, job_id: int, rearm: bool) -> None:
            row = conn.execute("select brooq.retry(job_id => %s, rearm_children => %s)", [job_id, rearm]).fetchone()
            j = self.jobs.get(job_id)
            expected = j is not None and j.state in BAD
            assert row is not None and row[0] is expected
            if j is not None and expected:
                self.redrive([j], rearm)

        @rule(rearm=st.booleans())
        def retry_dead(self, rearm: bool) -> None:
            """Every dead and canceled job of the topic re-driven in one call (parents and
            children of one another among them)."""
            row = conn.execute("select brooq.retry_dead(topic => %s, include_canceled => true,"
                               " rearm_children => %s)", [TOPIC, rearm]).fetchone()
            due = [j for j in self.jobs.values() if j.state in BAD]
            assert row is not None and row[0] == len(due)
            self.redrive(due, rearm)

        def redrive(self, jobs: list[Job], rearm: bool) -> None:
            for j in jobs:
                j.error = f"re-driven from {j.state} by "
                j.state = "waiting" if j.parents_left > 0 else "pending"
                j.available_at, j.updated_at = self.now, self.now
                j.max_attempts = j.attempts + MAX_ATTEMPTS  # a fresh budget
                j.lease_losses, j.canceled_by, j.verdict = 0, None, False
            self.rearm({j.id for j in jobs if self.is_parent(j.id)}, rearm)

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
                j.error = None
            # one release for every parent this reap made dead
            self.release({j.id: "dead" for j in expired if j.state == "dead" and self.is_parent(j.id)})

        @rule(worker=WORKERS, max_jobs=st.integers(min_value=1, max_value=3), lease=LEASES)
        def crash(self, worker: str, max_jobs: int, lease: timedelta) -> None:
            """A worker claims and dies: its lease runs out, a reaper comes (the poison
            pill's path, made likely: several crashes of one job in a row)."""
            self.take(worker, max_jobs, lease)
            self.advance(int(lease.total_seconds()) + 1)
            self.reap()

        @rule()
        def purge(self) -> None:
            row = conn.execute("select brooq.purge()").fetchone()
            def unfinished_child(j: Job) -> bool:
                return any(p == j.id and self.jobs[c].state not in TERMINAL for (p, c) in self.edges)

            due = [j for j in self.jobs.values() if j.state in TERMINAL and j.updated_at < self.now - RETENTION
                   and not unfinished_child(j)]
            assert row is not None and row[0] == len(due)
            for j in due:
                del self.jobs[j.id]
                # a child deleted takes its edges to its parents along; a parent's stay
                self.edges = {e: s for e, s in self.edges.items() if e[1] != j.id}

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
                               " available_at, updated_at, lease_losses, max_attempts, after_policy,"
                               " parents_left, exists (select from brooq.job_edge e where e.parent = j.id), canceled_by, last_error"
                               " from brooq.job j order by id")
            rows = {r[0]: r[1:] for r in cur.fetchall()}
            assert set(rows) == set(self.jobs)
            for j in self.jobs.values():
                expected = (j.state, j.attempts, j.token, j.locked_by, j.locked_until, j.available_at,
                            j.updated_at, j.lease_losses, j.max_attempts, j.after_policy, j.parents_left,
                            self.is_parent(j.id), j.canceled_by)
                assert rows[j.id][:-1] == expected, (j.id, rows[j.id], expected)
                last_error = rows[j.id][-1]
                assert j.error is None or (last_error or "").startswith(j.error), (j.id, last_error, j.error)
                # invariant 7: a failure on the last attempt, the poison pill, or
                # the outcome dead
                assert j.state != "dead" or j.attempts >= j.max_attempts \
                    or j.lease_losses >= MAX_LEASE_LOSSES or j.verdict
                # a job waits exactly while a parent of it has not finished
                assert (j.state == "waiting") == (j.state in ("waiting", "pending") and j.parents_left > 0)
            edges = conn.execute("select parent, child, settled from brooq.job_edge").fetchall()
            assert {(p, c): s for p, c, s in edges} == self.edges

        def teardown(self) -> None:
            conn.execute("reset brooq.now")

    return Queue


def multiple(*values: object) -> Any:
    from hypothesis.stateful import multiple as many
    return many(*values)


def test_the_sql_functions_follow_the_state_machine(conn: Conn) -> None:
    machine = make_machine(conn)
    run_state_machine_as_test(machine, settings=settings(
        max_examples=200, stateful_step_count=50, deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]))


# A claim from several topics merges their heads (brooq.claim, in rounds): against the
# same merge done here, over topics with priorities, times, delays and flow caps.
# (topic 0 is the busiest, so that one head holds most of the first max_jobs)
MERGE_JOB = st.tuples(st.sampled_from([0, 0, 0, 1, 2, 3]), st.integers(0, 2), st.integers(0, 20),
                      st.just(0) | st.integers(0, 10))


@given(jobs=st.lists(MERGE_JOB, min_size=4, max_size=60),
       caps=st.lists(st.none() | st.none() | st.integers(1, 6), min_size=4, max_size=4),
       busy=st.lists(st.integers(0, 3), min_size=4, max_size=4),
       claimed=st.sets(st.integers(0, 3), min_size=2), max_jobs=st.integers(1, 12))
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_a_claim_from_several_topics_takes_the_first_of_their_merged_heads(
        conn: Conn, jobs: list[tuple[int, int, int, int]], caps: list[int | None], busy: list[int],
        claimed: set[int], max_jobs: int) -> None:
    """jobs: (topic, priority, enqueued at EPOCH + s, delay s); caps: each topic's
    max_in_flight (None: no limit); busy: jobs of each topic claimed first (in flight)."""
    conn.execute("truncate brooq.job cascade")
    names = [f"merge.{i}" for i in range(4)]
    for name, cap in zip(names, caps, strict=True):
        conn.execute("select brooq.declare_topic(name => %s, max_in_flight => %s)", [name, cap])
    ready: dict[int, tuple[int, int, datetime]] = {}  # id -> (topic, priority, available_at)
    for topic, priority, at, delay in jobs:
        conn.execute("select set_config('brooq.now', %s, false)", [(EPOCH + timedelta(seconds=at)).isoformat()])
        row = conn.execute("select id from brooq.enqueue(topic => %s, payload => '{}', priority => %s,"
                           " delay => %s)", [names[topic], priority, timedelta(seconds=delay)]).fetchone()
        assert row is not None
        ready[row[0]] = (topic, priority, EPOCH + timedelta(seconds=at + delay))
    now = EPOCH + timedelta(seconds=22)
    conn.execute("select set_config('brooq.now', %s, false)", [now.isoformat()])

    def head(topic: int) -> list[int]:
        return sorted((j for j, (t, _, at) in ready.items() if t == topic and at <= now),
                      key=lambda j: (-ready[j][1], ready[j][2], j))

    in_flight = [0] * len(names)
    for topic, n in enumerate(busy):
        if n:
            rows = conn.execute("select id from brooq.claim('merge-busy', array[%s], %s)",
                                [names[topic], n]).fetchall()
            took = head(topic)[:min(n, caps[topic] or n)]
            assert sorted(r[0] for r in rows) == sorted(took)
            in_flight[topic] = len(took)
            for j in took:
                del ready[j]
    want: list[int] = []
    for topic in claimed:
        cap = caps[topic]
        want += head(topic)[:max_jobs if cap is None else max(0, cap - in_flight[topic])]
    want = sorted(want, key=lambda j: (-ready[j][1], ready[j][2], j))[:max_jobs]
    rows = conn.execute("select id from brooq.claim('merge', %s, %s)",
                        [[names[t] for t in sorted(claimed)], max_jobs]).fetchall()
    conn.execute("reset brooq.now")
    assert sorted(r[0] for r in rows) == sorted(want)
