"""What a chaos run records, and where.

Three witnesses, each written at the moment it happens:

- the client side, in memory of the harness: each enqueue acknowledged (logged after
  its commit returned), each cancel with the instant its commit returned, each fault
  (kill -9, SIGSTOP, a backend terminated, PostgreSQL stopped...), and when each worker
  process ended;
- the handlers, in ``chaos.execution`` through their own autocommit connection: one row
  per execution (job id, lease token, attempt, worker, pid, an execution id, start,
  end, whether the handler learnt that its lease was lost, and for a workflow's child
  the state and result of each parent as its handler saw them);
- the database, in ``chaos.transition``: a trigger on ``brooq.job`` logs every change of
  state or lease token (claim, settle, reap, cancel) in the same transaction as the
  change, and every deletion of a row that was not terminal. It sees only what
  committed, so it is the reference for reaps and lease losses.

Across a failover (tests/chaos/failover.py) the database keeps only what the promoted
standby had received, so the handlers write their executions to files instead, and
each worker also writes the outcomes the database acknowledged to it (``settles``);
the producer notes which payload each acknowledged id carried (``acked_payload``: an
id the new primary gave to another job is not the job that was acknowledged), and
the faults include each failover (``failover``: the instant the primary was killed).

Times are seconds since the epoch; the handlers, the harness and PostgreSQL share
one host and so one clock.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import psycopg

SCHEMA_SQL = """
create schema chaos;

create table chaos.execution (
    exec_id     text primary key,
    job_id      bigint not null,
    lease_token bigint not null,
    attempt     integer not null,
    worker      text not null,
    pid         integer not null,
    started_at  double precision not null,
    ended_at    double precision,
    lost        boolean,
    parents     jsonb              -- a workflow's child: what its handler saw of its parents
);

create table chaos.transition (
    seq       bigserial primary key,
    job_id    bigint not null,
    at        double precision not null default extract(epoch from clock_timestamp()),
    old_state text,
    new_state text,            -- NULL: the row was deleted
    old_token bigint,
    new_token bigint,
    attempts  integer,
    holder    text             -- the lease holder before (settle, reap, cancel) or after (claim)
);

create function chaos.log_transition() returns trigger
language plpgsql
as $$
begin
    if tg_op = 'DELETE' then
        insert into chaos.transition (job_id, old_state, new_state, old_token, new_token, attempts, holder)
        values (old.id, old.state, null, old.lease_token, null, old.attempts, old.locked_by);
        return old;
    end if;
    insert into chaos.transition (job_id, old_state, new_state, old_token, new_token, attempts, holder)
    values (new.id, old.state, new.state, old.lease_token, new.lease_token, new.attempts,
            coalesce(new.locked_by, old.locked_by));
    return new;
end
$$;

create trigger chaos_transition after update on brooq.job for each row
    when (old.state is distinct from new.state or old.lease_token is distinct from new.lease_token)
    execute function chaos.log_transition();

-- purge must never delete a live row: log any that goes
create trigger chaos_live_delete after delete on brooq.job for each row
    when (old.state not in ('done', 'dead', 'canceled'))
    execute function chaos.log_transition();
"""


@dataclass(frozen=True)
class Execution:
    exec_id: str
    job_id: int
    lease_token: int
    attempt: int
    worker: str
    pid: int
    started_at: float
    ended_at: float | None  # None: never finished (killed, or still stopped at the end)
    lost: bool = False  # the handler saw job.canceled: it stopped early
    # a workflow's child: its parents as its handler saw them (Job.parents), by id:
    # [state, the execution its result names]
    parents: dict[str, list[Any]] | None = None


@dataclass(frozen=True)
class Transition:
    seq: int
    job_id: int
    at: float
    old_state: str
    new_state: str | None  # None: the row was deleted
    old_token: int
    new_token: int | None
    attempts: int
    holder: str | None = None


@dataclass(frozen=True)
class JobRow:
    id: int
    state: str
    attempts: int
    max_attempts: int
    lease_token: int
    payload: Any
    result: Any = None
    last_error: str | None = None
    after_policy: str = "cancel"
    canceled_by: int | None = None


@dataclass(frozen=True)
class CancelRecord:
    job_id: int
    committed_at: float  # when the cancel's commit returned (the commit itself was earlier)
    canceled: bool  # what brooq.cancel answered


@dataclass(frozen=True)
class SettleRecord:
    """An outcome the database acknowledged to a worker (its settle committed)."""

    job_id: int
    lease_token: int
    state: str | None  # None: the lease was lost, nothing was written
    worker: str
    at: float


@dataclass(frozen=True)
class Fault:
    at: float
    kind: str
    target: str = ""
    detail: str = ""


@dataclass
class History:
    acked: dict[int, float] = field(default_factory=dict)  # job id -> when its enqueue's commit returned
    executions: list[Execution] = field(default_factory=list)
    transitions: list[Transition] = field(default_factory=list)
    jobs: dict[int, JobRow] = field(default_factory=dict)
    cancels: list[CancelRecord] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)
    process_end: dict[int, float] = field(default_factory=dict)  # pid -> killed or exited at
    has_transitions: bool = True  # False: a client-only history (the database log was not kept)
    settles: list[SettleRecord] = field(default_factory=list)  # acknowledged outcomes (failover runs)
    acked_payload: dict[int, int] = field(default_factory=dict)  # job id -> its payload's "p"
    edges: list[tuple[int, int]] = field(default_factory=list)  # workflows: (parent, child)

    def dump(self, path: Path) -> None:
        data = asdict(self)
        data["acked"] = list(self.acked.items())
        data["jobs"] = list(data["jobs"].values())
        data["process_end"] = list(self.process_end.items())
        data["acked_payload"] = list(self.acked_payload.items())
        path.write_text(json.dumps(data))

    @classmethod
    def load(cls, path: Path) -> History:
        data = json.loads(path.read_text())
        return cls(
            acked={int(k): v for k, v in data["acked"]},
            executions=[Execution(**e) for e in data["executions"]],
            transitions=[Transition(**t) for t in data["transitions"]],
            jobs={j["id"]: JobRow(**j) for j in data["jobs"]},
            cancels=[CancelRecord(**c) for c in data["cancels"]],
            faults=[Fault(**f) for f in data["faults"]],
            process_end={int(k): v for k, v in data["process_end"]},
            has_transitions=data["has_transitions"],
            settles=[SettleRecord(**s) for s in data.get("settles", [])],
            acked_payload={int(k): v for k, v in data.get("acked_payload", [])},
            edges=[(p, c) for p, c in data.get("edges", [])],
        )


def install(conn: psycopg.Connection[Any]) -> None:
    """Create the chaos schema and the transition triggers (autocommit connection)."""
    conn.execute(SCHEMA_SQL)  # several statements in one simple query


def read_database(conn: psycopg.Connection[Any], history: History, topics: list[str]) -> None:
    """Fill in the executions, transitions and job rows of ``topics`` from the database."""
    history.executions = [
        Execution(*r) for r in conn.execute(
            "select exec_id, job_id, lease_token, attempt, worker, pid, started_at, ended_at,"
            " coalesce(lost, false), parents from chaos.execution order by started_at").fetchall()]
    history.transitions = [
        Transition(*r) for r in conn.execute(
            "select seq, job_id, at, old_state, new_state, old_token, new_token, attempts, holder"
            " from chaos.transition order by seq").fetchall()]
    history.jobs = {
        r[0]: JobRow(*r) for r in conn.execute(
            "select id, state, attempts, max_attempts, lease_token, payload, result, last_error,"
            " after_policy, canceled_by from brooq.job where topic = any(%s)", [topics]).fetchall()}
    history.edges = [
        (r[0], r[1]) for r in conn.execute(
            "select e.parent, e.child from brooq.job_edge e join brooq.job j on j.id = e.child"
            " where j.topic = any(%s) order by e.child, e.parent", [topics]).fetchall()]
