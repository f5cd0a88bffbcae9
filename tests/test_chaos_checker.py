"""The chaos checker on hand-made histories: zero on a clean one, and exactly the
planted fault on each bad one (no database needed)."""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import pytest
from chaos.checker import VIOLATIONS, check
from chaos.history import CancelRecord, Execution, Fault, History, JobRow, SettleRecord, Transition


@dataclass
class _Row:
    state: str = "pending"
    attempts: int = 0
    token: int = 0
    max_attempts: int = 5
    plan: str = "ok"
    result: Any = None
    last_error: str | None = None
    after_policy: str = "cancel"
    canceled_by: int | None = None


@dataclass
class Builder:
    """Writes a history as a run would: the transition log, executions, acks, cancels."""

    h: History = field(default_factory=History)
    rows: dict[int, _Row] = field(default_factory=dict)
    seq: int = 0
    rng: random.Random = field(default_factory=lambda: random.Random(7))

    def job(self, job_id: int, plan: str = "ok", max_attempts: int = 5, acked: bool = True,
            after: tuple[int, ...] = (), policy: str = "cancel") -> None:
        """A job, in the state enqueue gives it; ``after``: a workflow's child of those
        parents, waiting while one has not ended, canceled at once (after_policy
        cancel) when one is dead or canceled already."""
        ended = {p: self.rows[p].state for p in after if self.rows[p].state in ("done", "dead", "canceled")}
        bad = sorted(p for p, state in ended.items() if state != "done")
        canceled = bool(bad) and policy == "cancel"
        state = "canceled" if canceled else "waiting" if len(ended) < len(after) else "pending"
        self.rows[job_id] = _Row(state=state, plan=plan, max_attempts=max_attempts, after_policy=policy,
                                 canceled_by=bad[0] if canceled else None)
        self.h.edges += [(p, job_id) for p in after]
        if acked:
            self.h.acked[job_id] = 0.0

    def release(self, job_id: int, at: float) -> None:
        """Its last parent ended: the child is ready."""
        self._log(job_id, at, "pending")

    def cancel_child(self, job_id: int, at: float, by: int) -> None:
        """A parent dead or canceled cancels its child (after_policy cancel)."""
        self._log(job_id, at, "canceled")
        self.rows[job_id].canceled_by = by

    def _log(self, job_id: int, at: float, new_state: str | None, new_token: int | None = None,
             attempts: int | None = None) -> None:
        r = self.rows[job_id]
        self.seq += 1
        token = r.token if new_token is None else new_token
        attempts = r.attempts if attempts is None else attempts
        self.h.transitions.append(Transition(self.seq, job_id, at, r.state, new_state, r.token,
                                             None if new_state is None else token, attempts))
        if new_state is not None:
            r.state, r.token, r.attempts = new_state, token, attempts

    def claim(self, job_id: int, at: float) -> int:
        """A claim with a new random token, as brooq.claim draws it; returns the token."""
        r = self.rows[job_id]
        self._log(job_id, at, "processing", self.rng.randrange(-2**63, 2**63), r.attempts + 1)
        return r.token

    def execute(self, job_id: int, exec_id: str, start: float, end: float | None, *,
                token: int | None = None, attempt: int | None = None, pid: int = 1,
                lost: bool = False) -> str:
        r = self.rows[job_id]
        parents = {str(p): [self.rows[p].state, (self.rows[p].result or {}).get("exec")]
                   for p, c in self.h.edges if c == job_id} or None  # as the claim hands them
        self.h.executions.append(Execution(
            exec_id, job_id, r.token if token is None else token,
            r.attempts if attempt is None else attempt, f"w{pid}", pid, start, end, lost, parents))
        return exec_id

    def settle(self, job_id: int, at: float, state: str, exec_id: str) -> None:
        r = self.rows[job_id]
        self._log(job_id, at, state)
        if state == "done":
            r.result = {"exec": exec_id}
        else:
            r.last_error = f"RuntimeError: planned failure exec={exec_id}"

    def reap(self, job_id: int, at: float) -> None:
        self._log(job_id, at, "pending")

    def poison(self, job_id: int, at: float, losses: int = 5) -> None:
        """``losses`` claims whose handler kills its process, each reaped; the last reap
        makes the job dead, as brooq.reap does at max_lease_losses."""
        for i in range(losses):
            self.claim(job_id, at + 3 * i)
            pid = 100 + job_id * 10 + i
            self.execute(job_id, f"p{job_id}-{i}", at + 3 * i + 0.1, None, pid=pid)
            self.h.process_end[pid] = at + 3 * i + 0.1
            if i < losses - 1:
                self.reap(job_id, at + 3 * i + 2.5)
        self._log(job_id, at + 3 * losses - 0.5, "dead")
        self.rows[job_id].last_error = (f"lease lost {losses} times in a row (max_lease_losses 5), the last "
                                        "of worker w expired at ...; job dead")

    def cancel(self, job_id: int, at: float) -> None:
        self._log(job_id, at, "canceled")
        self.h.cancels.append(CancelRecord(job_id, at + 0.01, True))

    def delete(self, job_id: int, at: float) -> None:
        self._log(job_id, at, None)
        del self.rows[job_id]

    def lost_claim(self, job_id: int, exec_id: str, start: float, end: float | None, pid: int = 1) -> int:
        """An execution on a claim a failover took away: a token the log never saw, the
        attempt that claim would have counted; returns the token."""
        token = self.rng.randrange(-2**63, 2**63)
        self.execute(job_id, exec_id, start, end, token=token, attempt=self.rows[job_id].attempts + 1, pid=pid)
        return token

    def acknowledge(self, job_id: int, state: str, at: float, token: int | None = None) -> None:
        """A worker saw the settle of the job's current claim (or ``token``'s) commit."""
        self.h.settles.append(SettleRecord(job_id, self.rows[job_id].token if token is None else token,
                                           state, "w1", at))

    def build(self) -> History:
        self.h.jobs = {
            i: JobRow(i, r.state, r.attempts, r.max_attempts, r.token, {"plan": r.plan}, r.result,
                      r.last_error, r.after_policy, r.canceled_by)
            for i, r in self.rows.items()}
        return self.h


def clean() -> Builder:
    """Every kind of thing a good run does."""
    b = Builder()
    b.job(1)  # claimed, run, done
    b.claim(1, 1.0)
    b.settle(1, 2.1, "done", b.execute(1, "a1", 1.1, 2.0))
    b.job(2, plan="fail_once")  # failed once, retried, done
    b.claim(2, 1.0)
    b.settle(2, 1.6, "failed", b.execute(2, "b1", 1.1, 1.5))
    b.claim(2, 3.0)
    b.settle(2, 3.6, "done", b.execute(2, "b2", 3.1, 3.5))
    b.job(3)  # its worker killed mid-handler (pid 9), reaped, done by another
    b.claim(3, 1.0)
    b.execute(3, "c1", 1.1, None, pid=9)
    b.h.faults.append(Fault(1.5, "kill9", "w9"))
    b.h.process_end[9] = 1.5
    b.reap(3, 4.0)
    b.claim(3, 4.1)
    b.settle(3, 4.6, "done", b.execute(3, "c2", 4.2, 4.5))
    b.job(4)  # canceled while running: the handler learns it, stops, writes nothing
    b.claim(4, 1.0)
    b.execute(4, "d1", 1.1, 2.3, lost=True)
    b.cancel(4, 2.0)
    b.job(5, plan="always_fail", max_attempts=2)  # dead after its last attempt
    b.claim(5, 1.0)
    b.settle(5, 1.6, "failed", b.execute(5, "e1", 1.1, 1.5))
    b.claim(5, 2.0)
    b.settle(5, 2.6, "dead", b.execute(5, "e2", 2.1, 2.5))
    b.job(6)  # canceled before anyone claimed it
    b.cancel(6, 0.5)
    b.job(7)  # stopped worker: reaped, done elsewhere, and overlapping the stale one
    b.claim(7, 1.0)
    b.execute(7, "g1", 1.1, 9.0, pid=8, lost=True)
    b.reap(7, 3.0)
    b.claim(7, 3.1)
    b.settle(7, 3.6, "done", b.execute(7, "g2", 3.2, 3.5))
    b.job(8)  # prefetched, canceled, started within the bound, then stopped
    token = b.claim(8, 1.0)
    b.cancel(8, 2.0)
    b.execute(8, "h1", 2.3, 2.4, token=token, attempt=1, lost=True)
    b.job(9)  # a prefetched claim that never ran (killed), reaped; then a retry after a failure
    b.claim(9, 1.0)
    b.settle(9, 1.6, "failed", b.execute(9, "i1", 1.1, 1.5))
    b.claim(9, 2.0)
    b.reap(9, 4.0)
    b.claim(9, 4.1)
    b.settle(9, 4.6, "done", b.execute(9, "i3", 4.2, 4.5))
    b.job(10, plan="exit")  # a poison pill: its handler kills the process; dead at the 5th reap
    b.poison(10, 1.0)
    b.job(11)  # four lease losses, a failure (which resets the count), then done
    for i in range(4):
        b.claim(11, 1.0 + i)
        b.reap(11, 1.9 + i)
    b.claim(11, 6.0)
    b.settle(11, 6.6, "failed", b.execute(11, "k1", 6.1, 6.5))
    b.claim(11, 7.0)
    b.settle(11, 7.6, "done", b.execute(11, "k2", 7.1, 7.5))
    workflow(b)
    return b


def workflow(b: Builder) -> None:
    """A workflow as a good run ends it: each child claimed only after its parents
    ended, released once, and canceled (transitively) or run by its policy."""
    b.job(40)
    b.job(42, plan="always_fail", max_attempts=1)
    b.job(41, after=(40,))  # released by its parent's end, then run
    b.job(43, after=(40, 42))  # canceled by its dead parent...
    b.job(44, after=(43,))  # ...and so its child too
    b.job(45, after=(42,), policy="run")  # runs after its dead parent all the same
    b.job(46, after=(40,))  # canceled itself while waiting
    b.cancel(46, 0.5)
    b.claim(40, 1.0)
    b.settle(40, 1.6, "done", b.execute(40, "w40", 1.1, 1.5))
    b.release(41, 1.6)
    b.job(47, after=(40,))  # enqueued after its parent was done: ready at once
    b.claim(42, 1.0)
    b.settle(42, 1.7, "dead", b.execute(42, "w42", 1.1, 1.5))
    b.cancel_child(43, 1.7, 42)
    b.cancel_child(44, 1.7, 43)
    b.release(45, 1.7)
    for i, job_id in enumerate((41, 45, 47)):
        b.claim(job_id, 2.0)
        b.settle(job_id, 2.6, "done", b.execute(job_id, f"w{job_id}", 2.1 + i / 10, 2.5))


def failover(b: Builder) -> None:
    """A failover at 10.0 (the primary killed, the standby promoted at 11.0), and what a
    good run does across it: a claim the standby never received (its handler ran, its
    settle was refused) is a job ready again, claimed anew and done once; a claim made
    just before the kill, its job prefetched and started within the bound after it;
    outcomes acknowledged before and after the failover are all in the log."""
    b.h.faults.append(Fault(10.0, "failover", "port 1"))
    b.h.faults.append(Fault(11.0, "promote", "port 2"))
    b.job(30)  # done before the failover, acknowledged
    b.claim(30, 9.0)
    b.settle(30, 9.5, "done", b.execute(30, "f1", 9.1, 9.4))
    b.acknowledge(30, "done", 9.5)
    b.job(31)  # its claim lost: run on the old primary, then claimed again on the new one
    b.lost_claim(31, "f2", 9.8, 12.5, pid=3)  # overlapping the new attempt until its heartbeat said lost
    b.claim(31, 11.5)
    b.settle(31, 12.2, "done", b.execute(31, "f3", 11.6, 12.1))
    b.acknowledge(31, "done", 12.2)
    b.job(32)  # claimed at 9.95, prefetched, started 0.05 s after the kill
    b.lost_claim(32, "f4", 10.05, 10.6)
    b.claim(32, 12.0)
    b.settle(32, 12.6, "done", b.execute(32, "f5", 12.1, 12.5))


def test_a_clean_history_has_no_violation() -> None:
    report = check(clean().build(), cancel_bound=1.0)
    assert report.counts == dict.fromkeys(VIOLATIONS, 0), report.summary()
    f = report.figures
    assert (f["jobs_acked"], f["jobs_done"], f["jobs_dead"], f["jobs_canceled"]) == (19, 10, 3, 6)
    assert (f["reaps"], f["reexecutions"], f["executions_unfinished"]) == (3 + 5 + 4, 5 + 4 + 1, 1 + 5)
    assert (f["poison_pills"], f["poison_pills_planned"]) == (1, 1)
    assert (f["started_after_cancel"], f["cancel_start_window_s"]) == (1, 0.29)
    assert f["stale_starts"] == 1  # h1 started after its cancel
    assert f["fault_kill9"] == 1
    assert (f["workflow_children"], f["workflow_released"], f["workflow_edges"]) == (6, 2, 7)
    assert (f["workflow_children_run"], f["workflow_children_run_after_a_bad_parent"],
            f["workflow_children_canceled_by_a_parent"], f["workflow_children_canceled_themselves"]) == (2, 1, 2, 1)
    assert f["workflow_child_executions"] == 3


def _lost(b: Builder) -> None:
    b.job(20)  # acknowledged, never run: still pending at the end
    b.job(21)
    b.rows.pop(21)  # acknowledged and missing (20 and 21: two planted)


def _unfinished(b: Builder) -> None:
    b.job(20)
    b.claim(20, 1.0)
    b.settle(20, 2.0, "done", b.execute(20, "z1", 1.1, None))  # a result, never finished


def _stale(b: Builder) -> None:
    b.job(20)
    b.claim(20, 1.0)
    e = b.execute(20, "z1", 1.1, 1.5)
    b.reap(20, 3.0)
    b.claim(20, 3.1)  # claimed again; the old execution's outcome lands
    b.settle(20, 3.2, "done", e)


def _overlap(b: Builder) -> None:
    b.job(20)
    b.claim(20, 1.0)
    b.execute(20, "z1", 1.1, 10.0)  # still running when...
    b.settle(20, 2.0, "failed", "z0")  # ...its claim was settled failed (no lease loss)
    b.claim(20, 3.0)
    b.settle(20, 4.0, "done", b.execute(20, "z2", 3.1, 3.9))


def _reexec(b: Builder) -> None:
    b.job(20)
    b.claim(20, 1.0)
    b.execute(20, "z1", 1.1, 1.5)
    b.settle(20, 2.6, "done", b.execute(20, "z2", 2.0, 2.5))  # the same claim run twice


def _after_cancel(b: Builder) -> None:
    b.job(20)
    token = b.claim(20, 1.0)
    b.cancel(20, 2.0)
    b.execute(20, "z1", 4.0, 4.1, token=token, attempt=1, lost=True)  # 2 s after: beyond the bound


def _dead(b: Builder) -> None:
    b.job(20, max_attempts=1)  # plan ok, but it died
    b.claim(20, 1.0)
    b.settle(20, 2.0, "dead", b.execute(20, "z1", 1.1, 1.5))


def _early_poison(b: Builder) -> None:
    b.job(20)
    b.poison(20, 1.0, losses=4)  # dead as a poison pill after 4 lease losses in a row, not 5


def _attempts(b: Builder) -> None:
    b.job(20)
    b.claim(20, 1.0)
    b.settle(20, 2.0, "done", b.execute(20, "z1", 1.1, 1.5, attempt=2))  # the claim said 1


def _illegal(b: Builder) -> None:
    b.job(20)
    b.claim(20, 1.0)
    b.settle(20, 2.0, "done", b.execute(20, "z1", 1.1, 1.5))
    b.rows[20].result = None
    b._log(20, 3.0, "canceled")  # a terminal state overwritten


def _missed_poison(b: Builder) -> None:
    b.job(20, acked=False)  # (not acknowledged, so not "lost" as well)
    for i in range(5):  # five reaps in a row, and the job still pending
        b.claim(20, 1.0 + i)
        b.reap(20, 1.9 + i)


def _reused(b: Builder) -> None:
    b.job(20)
    b.h.acked_payload[20] = 7  # acknowledged with the payload p=7; the id now holds {"plan": "ok"}
    b.claim(20, 1.0)
    b.settle(20, 2.0, "done", b.execute(20, "z1", 1.1, 1.5))


def _outcome_lost(b: Builder) -> None:
    failover(b)
    b.job(20)
    b.claim(20, 8.0)
    b.execute(20, "z1", 8.1, 8.5)
    b.acknowledge(20, "done", 8.6)  # acknowledged to the worker; the standby never had it
    b.reap(20, 12.0)
    b.claim(20, 12.1)
    b.settle(20, 12.6, "done", b.execute(20, "z2", 12.2, 12.5))


def _stale_through_a_lost_claim(b: Builder) -> None:
    failover(b)
    b.job(20)
    b.lost_claim(20, "z1", 9.5, 9.9)
    b.claim(20, 12.0)  # ready again on the new primary, claimed anew...
    b.settle(20, 12.2, "done", "z1")  # ...and the lost claim's outcome lands under the new lease


def _unknown_token_after_the_failover(b: Builder) -> None:
    failover(b)
    b.job(20)
    b.lost_claim(20, "z1", 12.0, 12.5)  # a token nobody claimed, 2 s after the failover
    b.claim(20, 13.0)
    b.settle(20, 13.6, "done", b.execute(20, "z2", 13.1, 13.5))


def _deleted(b: Builder) -> None:
    b.job(20, acked=False)  # its ack was lost, so it is not "lost": but purge deleted it live
    b.delete(20, 1.0)


def _ran_early(b: Builder) -> None:
    b.job(50)
    b.job(51, after=(50,))
    b.claim(50, 1.0)
    b.release(51, 1.2)  # made ready while its parent still runs...
    b.claim(51, 1.3)
    b.cancel(51, 1.4)  # ...and claimed (canceled before its handler started)
    b.settle(50, 1.6, "done", b.execute(50, "z50", 1.1, 1.5))


def _policy(b: Builder) -> None:
    b.job(52, plan="always_fail", max_attempts=1)
    b.job(53, after=(40, 52))
    b.claim(52, 3.0)
    b.settle(52, 3.5, "dead", b.execute(52, "z52", 3.1, 3.4))
    b.cancel_child(53, 3.5, 40)  # canceled in the name of its parent that is done
    b.job(54)
    b.job(55, after=(54,))
    b.claim(54, 3.0)
    b.settle(54, 3.5, "done", b.execute(54, "z54", 3.1, 3.4))
    b.cancel_child(55, 3.5, 54)  # every parent done, and the child canceled: two planted


def _misread(b: Builder) -> None:
    b.job(56)
    b.job(57, after=(56,))
    b.claim(56, 3.0)
    b.settle(56, 3.5, "done", b.execute(56, "z56", 3.1, 3.4))
    b.release(57, 3.5)
    b.claim(57, 3.6)
    b.rows[56].result = {"exec": "z0"}  # the child is handed another result than its parent's
    b.settle(57, 4.0, "done", b.execute(57, "z57", 3.7, 3.9))
    b.rows[56].result = {"exec": "z56"}


PLANTED: dict[str, tuple[Callable[[Builder], None], int]] = {
    "lost": (_lost, 2),
    "lost (an id given to another job)": (_reused, 1),
    "outcome_lost": (_outcome_lost, 1),
    "outcome_stale_lease (through a claim lost in a failover)": (_stale_through_a_lost_claim, 1),
    "attempts_mismatch (an unknown token after the failover)": (_unknown_token_after_the_failover, 1),
    "outcome_unfinished": (_unfinished, 1),
    "outcome_stale_lease": (_stale, 1),
    "overlap_unexplained": (_overlap, 1),
    "reexec_unexplained": (_reexec, 1),
    "started_after_cancel": (_after_cancel, 1),
    "unexpected_dead": (_dead, 1),
    "unexpected_dead (an early poison pill)": (_early_poison, 1),
    "attempts_mismatch": (_attempts, 1),
    "illegal_transition": (_illegal, 1),
    "illegal_transition (a missed poison pill)": (_missed_poison, 1),
    "live_row_deleted": (_deleted, 1),
    "child_ran_early": (_ran_early, 1),
    "policy_broken": (_policy, 2),
    "parents_misread": (_misread, 1),
}


def test_every_class_has_a_planted_case() -> None:
    assert {k.split(" (")[0] for k in PLANTED} == set(VIOLATIONS)


@pytest.mark.parametrize("kind", list(PLANTED))
def test_a_planted_fault_is_flagged_exactly(kind: str) -> None:
    plant, n = PLANTED[kind]
    kind = kind.split(" (")[0]
    b = clean()
    plant(b)
    report = check(b.build(), cancel_bound=1.0)
    expected = dict.fromkeys(VIOLATIONS, 0) | {kind: n}
    assert report.counts == expected, report.summary()
    assert all(d.startswith(kind) for d in report.details)


def _born_canceled(b: Builder) -> None:
    """A parent canceled before its child's enqueue: the child is enqueued canceled
    (the log has no transition of it), and its own child under after_policy run is
    ready at once and runs."""
    b.job(60)
    b.cancel(60, 0.5)
    b.job(61, after=(60,))  # enqueued canceled in 60's name
    b.job(62, after=(61,), policy="run")  # 61 has ended: pending at once
    b.claim(62, 2.0)
    b.settle(62, 2.6, "done", b.execute(62, "w62", 2.1, 2.5))


def test_a_parent_enqueued_canceled_has_ended_before_its_child_runs() -> None:
    b = clean()
    _born_canceled(b)
    h = b.build()
    assert h.jobs[61].state == "canceled" and not [t for t in h.transitions if t.job_id == 61]
    report = check(h, cancel_bound=1.0)
    assert report.counts == dict.fromkeys(VIOLATIONS, 0), report.summary()
    f = report.figures
    assert (f["workflow_children_canceled_by_a_parent"], f["workflow_children_run_after_a_bad_parent"]) == (3, 2)


def test_a_parent_enqueued_canceled_is_still_bad_for_a_child_under_cancel() -> None:
    b = clean()
    _born_canceled(b)
    b.job(63, after=(61,), policy="cancel")
    b.rows[63].state, b.rows[63].canceled_by = "pending", None  # enqueued ready all the same
    b.claim(63, 2.0)
    b.settle(63, 2.6, "done", b.execute(63, "w63", 2.1, 2.5))
    report = check(b.build(), cancel_bound=1.0)
    assert report.counts == dict.fromkeys(VIOLATIONS, 0) | {"child_ran_early": 1, "policy_broken": 1}, \
        report.summary()


@pytest.mark.parametrize(("state", "child"), [("processing", False), ("done", False), ("waiting", False),
                                              ("canceled", False), ("failed", True)])
def test_a_job_enqueued_in_a_state_enqueue_never_gives_is_flagged(state: str, child: bool) -> None:
    b = clean()
    b.job(64, acked=False)
    if child:
        b.h.edges.append((40, 64))
    b.rows[64].state = state
    if state == "done":
        b.rows[64].result = {"exec": "w64"}
        b.execute(64, "w64", 1.1, 1.5)
    report = check(b.build(), cancel_bound=1.0)
    assert report.counts["illegal_transition"] == 1, report.summary()
    assert f"job 64 enqueued {state}" in report.details[0]


def test_a_claim_that_hands_parents_states_without_results_is_judged_on_the_states() -> None:
    b = clean()
    h = b.build()
    h.executions = [e if e.parents is None else replace(e, parents={k: v[:1] for k, v in e.parents.items()})
                    for e in h.executions]
    assert sum(e.parents is not None for e in h.executions) == 3
    report = check(h, cancel_bound=1.0)
    assert report.counts == dict.fromkeys(VIOLATIONS, 0), report.summary()
    child = next(i for i, e in enumerate(h.executions) if e.parents and "40" in e.parents)
    h.executions[child] = replace(h.executions[child], parents={"40": ["failed"]})
    report = check(h, cancel_bound=1.0)
    assert report.counts == dict.fromkeys(VIOLATIONS, 0) | {"parents_misread": 1}, report.summary()


def test_claims_lost_in_a_failover_are_counted_not_flagged() -> None:
    b = clean()
    failover(b)
    report = check(b.build(), cancel_bound=1.0)
    assert report.counts == dict.fromkeys(VIOLATIONS, 0), report.summary()
    f = report.figures
    assert (f["failovers"], f["claims_lost_in_failover"], f["outcomes_acknowledged"]) == (1, 2, 2)
    assert (f["outcomes_lost_then_ran_again"], f["ids_reused"]) == (0, 0)


def test_an_acknowledged_outcome_lost_and_run_again_is_counted() -> None:
    b = clean()
    _outcome_lost(b)
    report = check(b.build(), cancel_bound=1.0)
    assert report.figures["outcomes_lost_then_ran_again"] == 1
    assert "the job ran again" in report.details[0]


def test_without_the_database_log_the_client_view_still_catches_a_stale_outcome() -> None:
    b = clean()
    _stale(b)
    h = b.build()
    h.transitions = []
    h.has_transitions = False
    report = check(h, cancel_bound=1.0)
    assert report.counts["outcome_stale_lease"] == 1, report.summary()


def test_the_cancel_window_is_measured_even_without_a_bound() -> None:
    b = clean()
    _after_cancel(b)
    report = check(b.build())  # no bound: nothing flagged, the window still reported
    assert report.counts["started_after_cancel"] == 0
    assert report.figures["cancel_start_window_s"] == pytest.approx(1.99)
    assert math.isinf(check.__defaults__[0])  # type: ignore[index]
