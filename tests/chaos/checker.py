"""Judge a chaos history: counts of each violation class, and the run's figures.

Pure functions of a History (see history.py), so hand-made histories test them.

Violation classes (each a count; a clean run has zero of every one):

lost                   an acknowledged enqueue whose job is missing, or not terminal
                       (done, dead, canceled) once the run has drained, or whose id
                       holds another job (a new primary that never received the
                       enqueue gave the id again)
outcome_lost           an outcome the database acknowledged to a worker (its settle
                       committed) that the database no longer has: no settle of that
                       claim to that state in the log (a failover to a standby that
                       never received it)
outcome_unfinished     a job done (or dead) whose outcome names no execution of that
                       job that finished (the result, or last_error, carries the id)
outcome_stale_lease    an outcome written by an execution whose claim was no longer
                       the job's current lease when the outcome was written
overlap_unexplained    two executions of one job that ran at the same time, unless the
                       earlier claim's lease was lost first (reaped or canceled)
reexec_unexplained     a job executed again without its previous claim ending in a
                       reap or a recorded failure/retry; or one claim executed twice
started_after_cancel   an execution that started more than ``cancel_bound`` seconds
                       after a cancel of its job had committed
unexpected_dead        a dead job that was not planned to fail every time, or that
                       died before its last attempt, unless it is a poison pill: made
                       dead by the reap that was its max_lease_losses-th lease loss in
                       a row (invariant 7, docs/architecture.md)
attempts_mismatch      attempts that disagree with the executions or the claims: an
                       execution whose (lease token, attempt) matches no claim, a row
                       whose attempts differ from its claims minus preserves
illegal_transition     a change of state that the state machine does not allow
                       (docs/architecture.md, States and transitions: out of
                       a terminal state, a claim that keeps the token, a job reaped
                       max_lease_losses times in a row and not made dead...), or a
                       job enqueued in a state enqueue does not give it (pending; a
                       workflow's child also waiting, or canceled by a parent already
                       dead or canceled). The log records changes, not inserts: a
                       job's first state is its first change's old state, or its
                       row's state when nothing changed it
live_row_deleted       a row deleted while pending, failed or processing (purge)

Workflows (a child enqueued after parents; docs/architecture.md, Workflows):

child_ran_early        a child claimed before each of its parents had ended (done, or
                       any terminal state under after_policy run), in the log's order:
                       the settle that ends a parent releases its children in its
                       own transaction, so a parent's end comes before its child's claim
                       (a parent enqueued canceled ended before anything of the log)
policy_broken          a child whose outcome is not its policy's: with every parent
                       done, or under after_policy run, it must run; under cancel with
                       a parent dead or canceled it must end canceled, never claimed,
                       in the name of such a parent (canceled_by) and after its end;
                       unless a cancel of the child itself came first (a child made
                       ready twice left pending for waiting between: illegal_transition)
parents_misread        an execution of a child whose handler saw (Job.parents) other
                       parents than the job's edges, a parent not ended, or a state or
                       result (the execution it names) other than the parent's final one
                       (a claim that hands states without results: the state alone)

A failover (a fault of kind "failover", at the instant the primary was killed) may
take away claims the standby never received: brooq commits its claims without
waiting for the flush (queries.CLAIM). An execution under a lease token the log does
not know, that started before the failover (or within ``cancel_bound`` after it: a
prefetched job starts on a claim confirmed at most START_CONFIRM earlier), ran on
such a lost claim; it is counted (``claims_lost_in_failover``), not flagged, and it
explains an overlap or a re-execution like a reap. Its outcome is still judged: an
outcome written under a token that was not the job's current lease is
``outcome_stale_lease``, and one written by an execution the log cannot place is
``outcome_unfinished``. Any other execution under an unknown token is an
``attempts_mismatch``.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from chaos.history import Execution, History, JobRow, Transition

TERMINAL = frozenset({"done", "dead", "canceled"})
READY = frozenset({"pending", "failed"})
VIOLATIONS = (
    "lost",
    "outcome_lost",
    "outcome_unfinished",
    "outcome_stale_lease",
    "overlap_unexplained",
    "reexec_unexplained",
    "started_after_cancel",
    "unexpected_dead",
    "attempts_mismatch",
    "illegal_transition",
    "live_row_deleted",
    "child_ran_early",
    "policy_broken",
    "parents_misread",
)
EXEC_IN_ERROR = re.compile(r"exec=([\w-]+)")
POISON_ERROR = "lease lost "  # how brooq.reap's last_error of a poison pill begins


@dataclass
class Report:
    violations: Counter[str] = field(default_factory=Counter)
    details: list[str] = field(default_factory=list)
    figures: dict[str, float] = field(default_factory=dict)

    def flag(self, kind: str, detail: str) -> None:
        assert kind in VIOLATIONS, kind
        self.violations[kind] += 1
        if len(self.details) < 200:
            self.details.append(f"{kind}: {detail}")

    @property
    def counts(self) -> dict[str, int]:
        """Every class with its count (zeros included)."""
        return {k: self.violations.get(k, 0) for k in VIOLATIONS}

    @property
    def total(self) -> int:
        return sum(self.violations.values())

    def summary(self) -> str:
        figures = ", ".join(f"{k} {v:g}" for k, v in self.figures.items())
        bad = ", ".join(f"{k} {v}" for k, v in self.counts.items() if v) or "none"
        return f"figures: {figures}\nviolations: {bad}" + "".join(
            f"\n  {d}" for d in self.details[:40])


@dataclass
class _Claim:
    """One claim of a job (one lease token), from the transition log."""

    token: int
    attempts: int
    at: float
    index: int  # the job's claims in order (tokens are random: docs/architecture.md, Leases)
    end_kind: str | None = None  # reap, cancel, settle:<state>, deleted; None: still held
    end_at: float = math.inf


def check(history: History, cancel_bound: float = math.inf, max_lease_losses: int = 5) -> Report:
    """The violations and figures of ``history``. ``cancel_bound``: how long after a
    cancel committed a handler of that job may still start (the documented window);
    ``max_lease_losses``: the topic's poison-pill setting."""
    report = Report()
    by_job: dict[int, list[Execution]] = defaultdict(list)
    for e in history.executions:
        by_job[e.job_id].append(e)
    transitions: dict[int, list[Transition]] = defaultdict(list)
    for t in sorted(history.transitions, key=lambda t: t.seq):
        transitions[t.job_id].append(t)
    claims = {job_id: _walk(job_id, ts, history, report, max_lease_losses)
              for job_id, ts in transitions.items()}
    lost_claims = _lost_in_failover(history, claims, cancel_bound)

    _check_births(history, transitions, report)
    _check_lost(history, report)
    _check_acknowledged_outcomes(history, transitions, by_job, report)
    _check_outcomes(history, transitions, report)
    _check_executions(history, by_job, claims, lost_claims, report)
    _check_cancels(history, by_job, cancel_bound, report)
    _check_workflows(history, transitions, report)
    _figures(history, by_job, claims, report, max_lease_losses)
    report.figures["failovers"] = len(failovers(history))
    report.figures["claims_lost_in_failover"] = len(lost_claims)
    return report


def failovers(history: History) -> list[float]:
    """When each failover's primary was killed."""
    return sorted(f.at for f in history.faults if f.kind == "failover")


def _lost_in_failover(history: History, claims: dict[int, dict[int, _Claim]],
                      bound: float) -> set[tuple[int, int]]:
    """(job id, lease token) of the executions that ran on a claim lost in a failover:
    a token the log does not know, the execution started before the last failover
    (plus ``bound``, a prefetched job's start). None without a failover or the log."""
    killed = failovers(history)
    if not killed or not history.has_transitions:
        return set()
    limit = killed[-1] + (bound if math.isfinite(bound) else 0.0)
    return {(e.job_id, e.lease_token) for e in history.executions
            if e.lease_token not in claims.get(e.job_id, {}) and e.started_at <= limit}


def is_poison(row: JobRow | None) -> bool:
    """Made dead by reap as a poison pill (its last_error says so)."""
    return row is not None and row.state == "dead" and (row.last_error or "").startswith(POISON_ERROR)


def _walk(job_id: int, ts: list[Transition], history: History, report: Report,
          max_lease_losses: int) -> dict[int, _Claim]:
    """Replay one job's transitions against the state machine; its claims by token."""
    claims: dict[int, _Claim] = {}
    previous: Transition | None = None
    row = history.jobs.get(job_id)
    losses = 0  # reaps in a row since an outcome was written
    for t in ts:
        where = f"job {job_id} seq {t.seq} {t.old_state}->{t.new_state}"
        if previous is not None and previous.new_state != t.old_state:
            report.flag("illegal_transition", f"{where}: the row was {previous.new_state}")
        if previous is not None and previous.new_token is not None and previous.new_token != t.old_token:
            report.flag("illegal_transition", f"{where}: token {t.old_token} after {previous.new_token}")
        if previous is not None and t.new_state is not None and \
                not _attempts_follow(previous.attempts, t):
            report.flag("attempts_mismatch",
                        f"{where}: attempts {previous.attempts} -> {t.attempts}")
        if t.new_state is None:
            report.flag("live_row_deleted", f"job {job_id} deleted while {t.old_state}")
            _end(claims, t, "deleted")
        elif t.old_state in TERMINAL:
            report.flag("illegal_transition", f"{where}: a terminal state was overwritten")
        elif t.new_state == "processing":
            if t.old_state not in READY or t.new_token is None or t.new_token == t.old_token \
                    or t.new_token in claims:
                report.flag("illegal_transition", f"{where}: a claim must take a ready job and give "
                                                  f"it a new token ({t.old_token}->{t.new_token})")
            if t.new_token is not None:
                claims[t.new_token] = _Claim(t.new_token, t.attempts, t.at, len(claims))
        elif t.new_token != t.old_token:
            report.flag("illegal_transition", f"{where}: only a claim changes the token")
        elif t.old_state == "waiting" and t.new_state == "pending":
            pass  # released by its last parent's end (judged in _check_workflows)
        elif t.old_state == "processing" and t.new_state == "pending":
            _end(claims, t, "reap")
            losses += 1
            if losses >= max_lease_losses:
                report.flag("illegal_transition", f"{where}: reaped {losses} times in a row "
                                                  f"(max_lease_losses {max_lease_losses}) and not dead")
        elif t.old_state == "processing" and t.new_state == "dead" and is_poison(row):
            _end(claims, t, "reap")  # the poison pill: the last lease loss
            losses += 1
        elif t.old_state == "processing" and t.new_state in ("done", "failed", "dead"):
            _end(claims, t, f"settle:{t.new_state}")
            losses = 0
        elif t.new_state == "canceled":
            if t.old_state == "processing":
                _end(claims, t, "cancel")
        else:
            report.flag("illegal_transition", f"{where}: not an edge of the state machine")
        previous = t
    if (previous is not None and row is not None and previous.new_state is not None
            and (previous.new_state != row.state or previous.attempts != row.attempts)):
        report.flag("attempts_mismatch", f"job {job_id}: the row says {row.state}/{row.attempts}, "
                                         f"its last transition {previous.new_state}/{previous.attempts}")
    return claims


def born_state(job_id: int, transitions: dict[int, list[Transition]], history: History) -> str | None:
    """The state ``job_id`` was enqueued in: the log records changes, not inserts, so
    the first change's old state, or the row's state when nothing ever changed it."""
    ts = transitions.get(job_id)
    if ts:
        return ts[0].old_state
    row = history.jobs.get(job_id)
    return row.state if row is not None else None


def _check_births(history: History, transitions: dict[int, list[Transition]], report: Report) -> None:
    """Each job was enqueued in a state enqueue gives: pending; a workflow's child also
    waiting (a parent still to end) or canceled (in the name of a parent already dead
    or canceled, under after_policy cancel)."""
    if not history.has_transitions:
        return
    children = {child for _, child in history.edges}
    for job_id in history.jobs:
        born = born_state(job_id, transitions, history)
        if born == "pending" or (job_id in children and born in ("waiting", "canceled")):
            continue  # (whether a child's start fits its parents and policy: _check_workflows)
        report.flag("illegal_transition", f"job {job_id} enqueued {born}"
                                          + ("" if job_id in children else " (not a workflow's child)"))


def _attempts_follow(before: int, t: Transition) -> bool:
    if t.new_state == "processing":
        return t.attempts == before + 1  # a claim charges an attempt
    if t.old_state == "processing" and t.new_state == "failed":
        return t.attempts in (before, before - 1)  # failed, delay keep it; preserve gives it back
    return t.attempts == before


def _end(claims: dict[int, _Claim], t: Transition, kind: str) -> None:
    claim = claims.get(t.old_token)
    if claim is not None and claim.end_kind is None:
        claim.end_kind = kind
        claim.end_at = t.at


def _check_lost(history: History, report: Report) -> None:
    reused = 0
    for job_id in sorted(history.acked):
        row = history.jobs.get(job_id)
        sent = history.acked_payload.get(job_id)
        if row is None:
            report.flag("lost", f"job {job_id} acknowledged, missing from brooq.job")
        elif sent is not None and (not isinstance(row.payload, dict) or row.payload.get("p") != sent):
            reused += 1
            report.flag("lost", f"job {job_id} acknowledged with payload p={sent}; the id now holds "
                                f"another job ({row.payload})")
        elif row.state not in TERMINAL:
            report.flag("lost", f"job {job_id} acknowledged, still {row.state} after the drain")
    report.figures["ids_reused"] = reused


def _check_acknowledged_outcomes(history: History, transitions: dict[int, list[Transition]],
                                 by_job: dict[int, list[Execution]], report: Report) -> None:
    """Every outcome a worker saw committed is in the log: a settle of that claim (its
    lease token) to that state. Counts those lost whose job then ran again."""
    if not history.has_transitions:
        return
    again = 0
    for s in history.settles:
        if s.state is None:
            continue  # the lease was lost: nothing was written, nothing acknowledged
        if any(t.old_state == "processing" and t.old_token == s.lease_token and t.new_state == s.state
               for t in transitions.get(s.job_id, [])):
            continue
        reran = any(e.lease_token != s.lease_token and e.started_at > s.at for e in by_job.get(s.job_id, []))
        again += reran
        report.flag("outcome_lost", f"job {s.job_id}: {s.state} under token {s.lease_token} acknowledged to "
                                    f"{s.worker}, not in the log" + ("; the job ran again" if reran else ""))
    report.figures["outcomes_acknowledged"] = sum(1 for s in history.settles if s.state is not None)
    report.figures["outcomes_lost_then_ran_again"] = again


def _outcome_exec(row_result: object, last_error: str | None, state: str) -> str | None:
    if state == "done":
        return row_result.get("exec") if isinstance(row_result, dict) else None
    m = EXEC_IN_ERROR.search(last_error or "")
    return m.group(1) if m else None


def _check_outcomes(history: History, transitions: dict[int, list[Transition]], report: Report) -> None:
    execs = {e.exec_id: e for e in history.executions}
    for row in history.jobs.values():
        if row.state not in ("done", "dead") or is_poison(row):
            continue  # (a poison pill's outcome is the reaper's: judged in _figures)
        exec_id = _outcome_exec(row.result, row.last_error, row.state)
        e = execs.get(exec_id) if exec_id else None
        if e is None or e.job_id != row.id or e.ended_at is None:
            report.flag("outcome_unfinished", f"job {row.id} {row.state}: written by {exec_id or 'nobody'}, "
                                              "not a finished execution of it")
            continue
        settled = [t for t in transitions.get(row.id, []) if t.new_state == row.state]
        if history.has_transitions and settled:
            t = settled[-1]
            stale = t.old_state != "processing" or t.old_token != e.lease_token
        else:
            stale = e.lease_token != row.lease_token
        if stale or e.lost:
            report.flag("outcome_stale_lease", f"job {row.id} {row.state} by exec {e.exec_id} "
                                               f"(token {e.lease_token}; the job's is {row.lease_token})")


def _end_of(e: Execution, history: History) -> float:
    if e.ended_at is not None:
        return e.ended_at
    return history.process_end.get(e.pid, math.inf)


def _check_executions(history: History, by_job: dict[int, list[Execution]],
                      claims: dict[int, dict[int, _Claim]], lost_claims: set[tuple[int, int]],
                      report: Report) -> None:
    for job_id, execs in by_job.items():
        job_claims = claims.get(job_id, {})

        def order(token: int, job_claims: dict[int, _Claim] = job_claims) -> float:
            """A claim's place among the job's claims; by token value without the log."""
            c = job_claims.get(token)
            return c.index if c is not None else (math.inf if history.has_transitions else token)

        execs = sorted(execs, key=lambda e: (order(e.lease_token), e.started_at))
        by_order = {c.index: c for c in job_claims.values()}
        row = history.jobs.get(job_id)
        for e in execs:
            if (job_id, e.lease_token) in lost_claims:
                continue  # its claim was lost in a failover: no attempt of the log's
            if history.has_transitions:
                claim = job_claims.get(e.lease_token)
                if claim is None or claim.attempts != e.attempt:
                    report.flag("attempts_mismatch", f"exec {e.exec_id} of job {job_id}: token "
                                                     f"{e.lease_token} attempt {e.attempt} matches no claim")
            elif row is not None and e.attempt > row.attempts:
                report.flag("attempts_mismatch", f"exec {e.exec_id} of job {job_id}: attempt {e.attempt}, "
                                                 f"token {e.lease_token} beyond the row's")
        # two executions at once
        for i, a in enumerate(execs):
            for b in execs[i + 1:]:
                if not (a.started_at < _end_of(b, history) and b.started_at < _end_of(a, history)):
                    continue
                if a.lease_token != b.lease_token and ((job_id, a.lease_token) in lost_claims
                                                       or (job_id, b.lease_token) in lost_claims):
                    continue  # the claim a failover took away ran on until its lease was found lost
                first = a if order(a.lease_token) <= order(b.lease_token) else b
                claim = job_claims.get(first.lease_token)
                if a.lease_token == b.lease_token or claim is None or claim.end_kind not in ("reap", "cancel"):
                    report.flag("overlap_unexplained", f"job {job_id}: exec {a.exec_id} (token {a.lease_token}) "
                                                       f"and {b.exec_id} (token {b.lease_token}) overlap")
        # executed again
        first_token = execs[0].lease_token
        for i, e in enumerate(execs[1:], start=1):
            prev = execs[i - 1]
            if (job_id, e.lease_token) in lost_claims and e.lease_token != prev.lease_token:
                continue  # run on a claim a failover took away: the job was ready again
            if e.lease_token == prev.lease_token:
                if e.started_at >= _end_of(prev, history):  # (an overlap is flagged above)
                    report.flag("reexec_unexplained", f"job {job_id}: claim {e.lease_token} executed twice "
                                                      f"({prev.exec_id}, {e.exec_id})")
                continue
            if e.lease_token == first_token or not history.has_transitions:
                continue
            this = job_claims.get(e.lease_token)
            if this is None:
                continue  # a token no claim gave: an attempts_mismatch already
            before = by_order.get(this.index - 1)
            if before is None or before.end_kind not in ("reap", "settle:failed"):
                report.flag("reexec_unexplained",
                            f"job {job_id}: executed again under token {e.lease_token}, the claim before "
                            f"ended {before.end_kind if before else 'unseen'}")


def _check_workflows(history: History, transitions: dict[int, list[Transition]], report: Report) -> None:
    """Each child against its parents' ends (the log's order: one sequence for every
    job) and its after_policy; what its handler saw of them. Needs the log."""
    parents: dict[int, list[int]] = defaultdict(list)
    for parent, child in history.edges:
        parents[child].append(parent)
    # a job's end: its first terminal transition (seq, state); a job enqueued in a
    # terminal state (canceled at once: a parent already dead or canceled) has no
    # transition to one, and ended before anything of the log (its children's
    # enqueue, so their claims, came after its own)
    ended: dict[int, tuple[int, str]] = {}
    for job_id in history.jobs:
        if (born := born_state(job_id, transitions, history)) in TERMINAL:
            ended[job_id] = (0, born)
    for job_id, ts in transitions.items():
        for t in ts:
            if t.new_state in TERMINAL:
                ended.setdefault(job_id, (t.seq, t.new_state))
                break
    canceled_itself = {c.job_id for c in history.cancels if c.canceled}
    f = Counter[str]()
    for child, ps in sorted(parents.items()):
        row = history.jobs.get(child)
        if row is None or not history.has_transitions:
            continue  # lost (flagged elsewhere), or no log to order by
        f["children"] += 1
        ts = transitions.get(child, [])
        claims = [t for t in ts if t.new_state == "processing"]
        rows = {p: history.jobs.get(p) for p in ps}
        bad = sorted(p for p, r in rows.items() if r is not None and r.state in ("dead", "canceled"))
        run = row.after_policy == "run"
        for c in claims[:1]:
            late = [p for p in ps if p not in ended or ended[p][0] > c.seq
                    or (not run and ended[p][1] != "done")]
            if late:
                report.flag("child_ran_early", f"job {child} ({row.after_policy}) claimed at seq {c.seq} "
                                               f"before parents {late} had ended so")
        f["released"] += sum(1 for t in ts if t.old_state == "waiting" and t.new_state == "pending")
        if child in canceled_itself:
            f["children_canceled_themselves"] += 1
        elif not bad or run:
            if not claims or row.state == "canceled":
                report.flag("policy_broken", f"job {child} ({row.after_policy}, parents {ps}, bad {bad}) "
                                             f"ended {row.state} with {len(claims)} claims: it had to run")
            f["children_run_after_a_bad_parent" if bad else "children_run"] += 1
        else:
            cancel = next((t for t in ts if t.new_state == "canceled"), None)
            cause = ended.get(row.canceled_by) if row.canceled_by is not None else None
            if (row.state != "canceled" or claims or row.canceled_by not in bad
                    or (cancel is not None and (cause is None or cause[0] > cancel.seq))):
                report.flag("policy_broken", f"job {child} (cancel, parents {ps}, bad {bad}) ended {row.state}"
                                             f" by {row.canceled_by} with {len(claims)} claims")
            f["children_canceled_by_a_parent"] += 1
    for e in history.executions:
        if e.job_id not in parents:
            continue
        f["child_executions"] += 1
        want = {str(p): [r.state, r.result.get("exec") if isinstance(r.result, dict) else None]
                for p in parents[e.job_id] if (r := history.jobs.get(p)) is not None}
        if not _seen_as_ended(e.parents, want) or any(s not in TERMINAL for s, _ in want.values()):
            report.flag("parents_misread", f"exec {e.exec_id} of job {e.job_id} saw {e.parents}, "
                                           f"the parents ended {want}")
    report.figures |= {f"workflow_{k}": v for k, v in sorted(f.items())}
    report.figures["workflow_edges"] = len(history.edges)


def _seen_as_ended(seen: dict[str, list[Any]] | None, ended: dict[str, list[Any]]) -> bool:
    """Whether a handler saw its parents as they ended: each one's [state, execution its
    result names], or [state] alone from a claim that hands no results."""
    return (seen is not None and seen.keys() == ended.keys()
            and all(len(v) in (1, 2) and v == ended[k][:len(v)] for k, v in seen.items()))


def _paused(history: History, worker: str, start: float, end: float) -> float:
    """Seconds ``worker`` spent SIGSTOPped between ``start`` and ``end`` (a fault's detail
    is its length, e.g. "4.0s")."""
    total = 0.0
    for f in history.faults:
        if f.kind == "sigstop" and f.target == worker:
            length = float(f.detail.rstrip("s") or 0)
            total += max(0.0, min(end, f.at + length) - max(start, f.at))
    return total


def _check_cancels(history: History, by_job: dict[int, list[Execution]], bound: float,
                   report: Report) -> None:
    """A handler may start at most ``bound`` after a cancel committed, not counting the
    time its process was paused (SIGSTOP) meanwhile: a worker starts a prefetched job
    only on a lease confirmed at most brooq.runner.START_CONFIRM earlier, and a pause
    between that check and the handler's first line delays the start by itself."""
    after: list[float] = []
    for c in history.cancels:
        if not c.canceled:
            continue
        for e in by_job.get(c.job_id, []):
            if e.started_at > c.committed_at:
                delay = e.started_at - c.committed_at
                after.append(delay)
                if delay - _paused(history, e.worker, c.committed_at, e.started_at) > bound:
                    report.flag("started_after_cancel", f"job {c.job_id}: exec {e.exec_id} started "
                                                        f"{delay:.3f}s after the cancel committed")
    report.figures["started_after_cancel"] = len(after)
    report.figures["cancel_start_window_s"] = round(max(after, default=0.0), 3)


def _trailing_reaps(job_claims: dict[int, _Claim]) -> int:
    n = 0
    for c in sorted(job_claims.values(), key=lambda c: c.index, reverse=True):
        if c.end_kind != "reap":
            break
        n += 1
    return n


def _figures(history: History, by_job: dict[int, list[Execution]],
             claims: dict[int, dict[int, _Claim]], report: Report, max_lease_losses: int) -> None:
    states = Counter(row.state for row in history.jobs.values())
    poison = planned_poison = 0
    for row in history.jobs.values():
        if is_poison(row):
            poison += 1
            plan = row.payload.get("plan") if isinstance(row.payload, dict) else None
            planned_poison += plan == "exit"
            n = _trailing_reaps(claims.get(row.id, {})) if history.has_transitions else max_lease_losses
            if n != max_lease_losses:
                report.flag("unexpected_dead", f"job {row.id} dead as a poison pill after {n} lease "
                                               f"losses in a row (max_lease_losses {max_lease_losses})")
        elif row.state == "dead":
            planned = isinstance(row.payload, dict) and row.payload.get("plan") == "always_fail"
            if not planned or row.attempts < row.max_attempts:
                report.flag("unexpected_dead", f"job {row.id} dead after {row.attempts}/{row.max_attempts} "
                                               f"attempts: {row.last_error}")
    all_claims = [c for cs in claims.values() for c in cs.values()]
    stale_starts = 0
    for e in history.executions:
        c = claims.get(e.job_id, {}).get(e.lease_token)
        if c is not None and c.end_kind in ("reap", "cancel") and e.started_at > c.end_at:
            stale_starts += 1
    f = report.figures
    f["jobs_acked"] = len(history.acked)
    for s in ("done", "dead", "canceled"):
        f[f"jobs_{s}"] = states.get(s, 0)
    f["executions"] = len(history.executions)
    f["executions_unfinished"] = sum(1 for e in history.executions if e.ended_at is None)
    f["executions_lease_lost"] = sum(1 for e in history.executions if e.lost)
    f["reexecutions"] = len(history.executions) - len(by_job)
    f["claims"] = len(all_claims)
    f["reaps"] = sum(1 for c in all_claims if c.end_kind == "reap")
    f["cancels_while_running"] = sum(1 for c in all_claims if c.end_kind == "cancel")
    f["cancels"] = sum(1 for c in history.cancels if c.canceled)
    f["stale_starts"] = stale_starts
    f["poison_pills"] = poison
    f["poison_pills_planned"] = planned_poison
    for kind, n in sorted(Counter(x.kind for x in history.faults).items()):
        f[f"fault_{kind}"] = n
