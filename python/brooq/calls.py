"""The public calls of brooq, declared once: enqueue, get_job, declare_topic, retry, ...

Each declaration is a function of the call's own arguments (no connection) that checks
them and returns the :class:`brooq.faces.Statement` to run: its SQL (brooq.queries), its
parameters, how its rows become its result, the role it needs (a 42501 names it) and how
its errors read. Its signature and doc are the call's. Every face is made from it by
brooq.faces, none written by hand: brooq.producer and brooq.admin (a psycopg.Connection),
brooq.aio (an AsyncConnection), brooq.contrib.sqlalchemy and .aio (a Session or
Connection), brooq.contrib.django (Django's connection); tests/test_api_faces.py holds
every face to the declaration. A new call is declared here, named in DECLARED, and given
one line in each face module.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, NamedTuple

import psycopg
from psycopg.rows import class_row, scalar_row

from brooq import queries, settings
from brooq.declared import takes_settings
from brooq.errors import ADMIN, PRODUCER, WORKER, InvalidArgument, KeyBusy, UndecodableJob
from brooq.faces import Read, Statement, Traced
from brooq.payload import Undecodable, jsonb
from brooq.rows import ChildJob, HealthCheck, ParentJob, ScheduleStatus, TopicStats
from brooq.settings import Topic, TopicSettings, parameters, topic_row
from brooq.states import CLAIMABLE, STATES

# The calls every face has, in the order the docs list them.
DECLARED = ("enqueue", "enqueue_many", "get_job", "parents", "children", "list_jobs", "count_jobs",
            "topic_stats", "get_topic", "declare_topic", "alter_topic", "pause_topic", "resume_topic",
            "cancel", "retry", "retry_dead", "flush", "schedule", "unschedule", "list_schedules",
            "drop_topic", "health")


# --- results --------------------------------------------------------------------------

class Enqueued(NamedTuple):
    """The answer of enqueue: the job's id, and False when its key already existed.

    Made by position from the columns of queries.ENQUEUE and ENQUEUE_MANY (``id,
    created``; tests/test_client_producer.py checks them by name): a row factory reads
    the result's description at every call, ~10 us of a single enqueue's ~90 us of
    client CPU."""

    id: int
    created: bool


class JobFate(NamedTuple):
    """A job's row as stored: its state and outcome (see :func:`get_job`)."""

    id: int
    topic: str
    state: str
    attempts: int
    max_attempts: int
    priority: int
    last_error: str | None
    result: Any
    payload: Any
    key: str | None
    available_at: datetime
    created_at: datetime
    updated_at: datetime
    locked_by: str | None
    locked_until: datetime | None
    progress: Any = None  # what the handler last reported (job.progress), if anything
    group_key: str | None = None  # its ordered group, if any (enqueue's group)


def decoded(fate: JobFate | None) -> JobFate | None:
    """The fate read by get_job or wait; UndecodableJob when a JSON column of it is an
    Undecodable (its cursor was guard_jsonb's)."""
    if fate is None:
        return None
    for column in ("payload", "result", "progress"):
        value = getattr(fate, column)
        if isinstance(value, Undecodable):
            reason = f"job {fate.id}: its {column} is JSON that Python cannot decode ({value.cause})"
            hint = (f"read it as text: select state, last_error, {column}::text from brooq.jobs"
                    f" where id = {fate.id}")
            raise UndecodableJob(f"{reason} (hint: {hint})", job_id=fate.id, hint=hint, reason=reason)
    return fate


def _one(row: Any) -> Any:
    assert row is not None  # the SQL function returns exactly one row, or raises
    return row


def _enqueued(row: Any) -> Enqueued:
    return Enqueued._make(_one(row))


def _all_enqueued(rows: list[Any]) -> list[Enqueued]:
    return [Enqueued._make(row) for row in rows]


def _count(value: Any) -> int:
    return int(value or 0)


def _same(value: Any) -> Any:
    return value


ONE_ENQUEUED: Read[Enqueued] = Read(None, False, _enqueued)
ALL_ENQUEUED: Read[list[Enqueued]] = Read(None, True, _all_enqueued)
TOPIC: Read[Topic] = Read(topic_row, False, _one)
TOPIC_OR_NONE: Read[Topic | None] = Read(topic_row, False, _same)
FLAG: Read[bool] = Read(scalar_row, False, bool)
COUNT: Read[int] = Read(scalar_row, False, _count)
FATE: Read[JobFate | None] = Read(class_row(JobFate), False, decoded, json=True)
FATES: Read[list[JobFate]] = Read(class_row(JobFate), True, _same, json=True)


# --- producer calls -------------------------------------------------------------------

def enqueue_args(topic: str, payload: Any, key: str | None, at: datetime | None,
                 delay: timedelta | None, priority: int, group: str | None = None) -> list[Any]:
    """The parameters of queries.ENQUEUE before its trace_context."""
    return [topic, jsonb(payload), key, at, priority, delay, group]


def after_args(after: Sequence[int] | None, after_policy: str) -> list[Any]:
    """The after and after_policy parameters of queries.ENQUEUE_AFTER; none for a job
    without parents, which takes queries.ENQUEUE."""
    return [] if after is None and after_policy == "cancel" else [None if after is None else list(after), after_policy]


def enqueue_many_args(topic: str, payloads: Iterable[Any], keys: Sequence[str | None] | None,
                      at: datetime | None, delay: timedelta | None, priority: int,
                      groups: Sequence[str | None] | None = None) -> list[Any]:
    """The parameters of queries.ENQUEUE_MANY before its trace_context."""
    return [topic, [jsonb(p) for p in payloads], None if keys is None else list(keys), at,
            priority, delay, None if groups is None else list(groups)]


def edge_args(after: Sequence[tuple[int, int]] | None, after_policy: str) -> list[Any]:
    """The after_child, after_parent and after_policy parameters of
    queries.ENQUEUE_MANY_AFTER: ``after`` is (child, parent) pairs, the child an element
    from 1, the parent a job id or -k for element k of the same call. None for a call
    without edges, which takes queries.ENQUEUE_MANY."""
    if after is None and after_policy == "cancel":
        return []
    edges = [] if after is None else list(after)
    if any(len(edge) != 2 for edge in edges):
        raise InvalidArgument("after takes (child, parent) pairs: the child an element of the call "
                              "from 1, the parent a job id or -k for element k")
    return [[c for c, _ in edges], [p for _, p in edges], after_policy]


def busy_what(key: str | None, group: str | None) -> str:
    """What an enqueue waited on too long (55P03): its idempotency key, its group, or either."""
    named = [f"idempotency key {key[:40]!r}" if key else "", f"group {group[:40]!r}" if group else ""]
    return " or ".join(n for n in named if n) or "idempotency key ''"


def busy_what_batch(groups: Sequence[str | None] | None) -> str:
    """What an enqueue_many waited on too long (55P03): a key, or a group when it has groups."""
    return "an idempotency key of the batch" if groups is None else "an idempotency key or group of the batch"


def key_busy(exc: KeyBusy, topic: str, what: str) -> KeyBusy:
    """55P03 from enqueue, saying which key: PostgreSQL's lock timeout cannot. brooq's own
    55P03 (a key whose job a router staged and has not published) says it already, with
    a hint, which PostgreSQL's lock timeout never has (in any server language)."""
    cause = exc.__cause__
    if isinstance(cause, psycopg.Error) and cause.diag.message_hint:
        return exc
    return KeyBusy(f"{what} of topic {topic[:200]!r} is held by another transaction's "
                   "uncommitted enqueue, longer than brooq.key_wait", sqlstate="55P03",
                   hint="commit or roll back that transaction first, or wait longer: "
                        "SET brooq.key_wait = '30s'")


def enqueue(topic: str, payload: Any, *, key: str | None = None, at: datetime | None = None,
            delay: timedelta | None = None, priority: int = 0, group: str | None = None,
            after: Sequence[int] | None = None, after_policy: str = "cancel") -> Statement[Enqueued]:
    """Enqueue one job in the caller's transaction; returns (id, created).

    ``key`` is the idempotency key: a second enqueue with the same (topic, key)
    returns the first job's id with ``created=False``. ``at`` or ``delay`` (not
    both) keep the job from being claimed before that instant; ``delay`` is added
    to the database clock, not to this machine's. ``group``: an ordered group; the
    jobs of one (topic, group) run one at a time, in the order their enqueues
    committed (brooq.enqueue's group_key). ``after``: the ids of the jobs this one
    waits for (a workflow: it is ``waiting``, never claimed, until they have
    finished); ``after_policy``: ``cancel`` (a dead or canceled parent cancels it)
    or ``run`` (it runs once every parent has finished, whatever the outcome).
    """
    args = enqueue_args(topic, payload, key, at, delay, priority, group)
    parents = after_args(after, after_policy)
    return Statement(queries.ENQUEUE_AFTER if parents else queries.ENQUEUE, [*args, *parents],
                     PRODUCER, ONE_ENQUEUED, Traced(topic, "enqueue", None, len(args)),
                     lambda exc: key_busy(exc, topic, busy_what(key, group)))


def enqueue_many(topic: str, payloads: Iterable[Any], *, keys: Sequence[str | None] | None = None,
                 at: datetime | None = None, delay: timedelta | None = None, priority: int = 0,
                 groups: Sequence[str | None] | None = None,
                 after: Sequence[tuple[int, int]] | None = None,
                 after_policy: str = "cancel") -> Statement[list[Enqueued]]:
    """Enqueue many jobs of one topic in one statement; results in input order.
    ``groups``: one ordered group per payload (None: no group), see enqueue.
    ``after``: a workflow's edges, (child, parent) pairs: element ``child`` (from 1)
    waits for ``parent``, a job id or ``-k`` for element k of this call (an earlier
    one); ``after_policy`` for every child, as in enqueue."""
    args = enqueue_many_args(topic, payloads, keys, at, delay, priority, groups)
    edges = edge_args(after, after_policy)
    return Statement(queries.ENQUEUE_MANY_AFTER if edges else queries.ENQUEUE_MANY, [*args, *edges],
                     PRODUCER, ALL_ENQUEUED, Traced(topic, "enqueue_many", len(args[1]), len(args)),
                     lambda exc: key_busy(exc, topic, busy_what_batch(groups)))


def _job_id(job_id: int) -> list[Any]:
    if job_id is None:
        raise InvalidArgument("job_id must not be None")
    return [job_id]


def _limit(limit: int) -> int:
    if not 1 <= limit <= 10000:
        raise InvalidArgument(f"limit {limit} is not between 1 and 10000")
    return limit


def get_job(job_id: int) -> Statement[JobFate | None]:
    """A job's fate in one SELECT, or None when no job has this id (never existed or purged).

    Reads the view brooq.jobs, which brooq_producer, brooq_worker and brooq_admin
    may read (the table brooq.job itself is private). UndecodableJob when its payload,
    result or progress is JSON that Python cannot decode.
    """
    return Statement(queries.GET_JOB, _job_id(job_id), PRODUCER, FATE)


def parents(job_id: int) -> Statement[list[ParentJob]]:
    """The parents of a job (workflows: ``enqueue(..., after=...)``) in one query, by id:
    a child's handler reads their states and results here, not one get_job per parent.
    Empty for a job without parents. A result Python cannot decode is a brooq.Undecodable."""
    return Statement(queries.PARENTS, _job_id(job_id), PRODUCER,
                     Read(class_row(ParentJob), True, _same, json=True))


def children(job_id: int, *, limit: int = 100) -> Statement[list[ChildJob]]:
    """The jobs that wait (or waited) for a job, lowest ids first, at most ``limit`` (1 to
    10000; ask for one more than you show to learn whether there are more): their states
    and the parents each still waits for. Empty for a job without children."""
    return Statement(queries.CHILDREN, [*_job_id(job_id), _limit(limit)], PRODUCER,
                     Read(class_row(ChildJob), True, _same))


def _filters(topic: str | Sequence[str] | None, states: Sequence[str] | None) -> dict[str, Any]:
    """The topics and states parameters of queries.LIST_JOBS and COUNT_JOBS (None: any)."""
    if isinstance(states, str):  # it would be read as its letters
        raise InvalidArgument(f"states must be a list of states, not the string {states[:200]!r}")
    if states is not None and (bad := sorted(set(states) - set(STATES))):
        raise InvalidArgument(f"unknown state {bad[0][:40]!r}: one of {', '.join(STATES)}")
    return {"topics": None if topic is None else [topic] if isinstance(topic, str) else list(topic),
            "states": None if states is None else list(states)}


def list_jobs(*, topic: str | Sequence[str] | None = None, states: Sequence[str] | None = None,
              limit: int = 50) -> Statement[list[JobFate]]:
    """Jobs newest first (highest id), at most ``limit`` (1 to 10000), of ``topic`` (a
    name, or several) and in ``states`` when given: e.g. the dead ones with their last_error. A payload,
    result or progress Python cannot decode is given as a brooq.Undecodable (a str that
    says why): one such job never hides the others."""
    _limit(limit)
    return Statement(queries.LIST_JOBS, {**_filters(topic, states), "limit": limit}, PRODUCER, FATES)


def count_jobs(*, topic: str | Sequence[str] | None = None,
               states: Sequence[str] | None = None) -> Statement[int]:
    """How many jobs there are of ``topic`` (a name, or several) and in ``states`` when
    given, with list_jobs's filters: e.g. what ``flush`` would delete."""
    return Statement(queries.COUNT_JOBS, _filters(topic, states), PRODUCER, COUNT)


def topic_stats() -> Statement[list[TopicStats]]:
    """Depth and lag of every topic (brooq.topic_stats), ordered by topic."""
    return Statement(queries.TOPIC_STATS, [], WORKER, Read(class_row(TopicStats), True, _same))


def get_topic(name: str) -> Statement[Topic | None]:
    """A topic as stored: its settings, whether it is paused, when it was declared and last
    changed (brooq.topics); None when no topic has this name (needs brooq_worker)."""
    return Statement(queries.TOPIC, [name], WORKER, TOPIC_OR_NONE)


def list_schedules() -> Statement[list[ScheduleStatus]]:
    """Every periodic job (brooq.schedules), by name: its cron, who ticks it, its topic and
    payload, its next and last tick, the last job it enqueued and that job's state, and the
    last tick's error (needs brooq_worker). A payload Python cannot decode is a
    brooq.Undecodable."""
    return Statement(queries.SCHEDULES, [], WORKER, Read(class_row(ScheduleStatus), True, _same, json=True))


def health() -> Statement[list[HealthCheck]]:
    """What needs a person (brooq.health()): each check's name, its status (ok; warn, look
    at it soon; fail, look at it now) and what it saw (needs brooq_worker)."""
    return Statement(queries.HEALTH, [], WORKER, Read(class_row(HealthCheck), True, _same))


# --- topic administration (brooq_admin) -----------------------------------------------

@dataclass(frozen=True, kw_only=True)
class TopicChanges(TopicSettings):
    """What alter_topic takes: any of the settings (only those named change), and
    ``clear``, the settings whose None means no limit to set back to none."""

    clear: Sequence[str] = ()


def declare_topic_settings(name: str, settings: TopicSettings) -> Statement[Topic]:
    """declare_topic with the settings as one TopicSettings (a worker's registered ones)."""
    return Statement(queries.DECLARE_TOPIC, {"name": name, **parameters(settings)}, ADMIN, TOPIC)


@takes_settings(TopicSettings)
def declare_topic(name: str, settings: TopicSettings) -> Statement[Topic]:
    """Create a topic or set all of its settings (idempotent; needs brooq_admin); returns
    the topic as stored. A declaration is the whole truth: a setting not given takes its
    default again. The keyword arguments are the fields of brooq.TopicSettings, each
    with its default, range and meaning there; in short:
    ``max_attempts``, ``backoff_base``, ``backoff_max``: claims before a failure is final,
    and the retry delays (doubled each time, up to backoff_max);
    ``retention``: how long finished jobs are kept; ``max_payload_bytes``; ``notify``;
    ``max_lease``: the longest lease claim may give a job of the topic;
    ``max_lease_losses``: that many lease losses (reaps) of a job in a row, with no
    outcome written between, make it dead (a handler that kills its process).
    Flow control, enforced by brooq.claim for every worker (None: no limit):
    ``max_in_flight``: at most that many jobs of the topic processing at once;
    ``rate``, ``per``: at most ``rate`` jobs claimed in any window of ``per``
    (default one second).
    ``max_execution``: the longest a job may take across all its attempts, from its
    first claim (None: no limit); past it the attempt running is stopped and fails,
    and so does every later one, until the attempts are spent.

    Retention policies: ``retain_done=False`` deletes a job as it is settled done
    (its idempotency key is free again); ``retain_payload=False`` clears the
    payload (to JSON null) of a job that is done, dead or canceled."""
    return declare_topic_settings(name, settings)


def alter_topic_params(name: str, changes: dict[str, Any]) -> dict[str, Any]:
    """The parameters of queries.ALTER_TOPIC: the settings named in ``changes``, every
    other one NULL (left as it is)."""
    clear = changes.pop("clear", ())
    if isinstance(clear, str):
        raise InvalidArgument(f"clear must be a list of settings, not the string {clear[:200]!r}")
    for setting, value in changes.items():
        if value is None:
            raise InvalidArgument(f"{setting} of topic {name[:200]!r} is None: to set it to none "
                                  f"(no limit), name it in clear: clear=[{setting!r}]")
    return {"name": name, **{n: changes.get(n) for n in settings.NAMES}, "clear": list(clear)}


@takes_settings(TopicChanges, named=True)
def alter_topic(name: str, changes: dict[str, Any]) -> Statement[Topic]:
    """Change only the settings named, of a declared topic; every other setting, and
    whether it is paused, stays (brooq.alter_topic; needs brooq_admin). Returns the
    topic as stored. The keyword arguments are the settings of brooq.TopicSettings,
    checked as declare_topic checks them, and ``clear``: the settings whose None means
    no limit (max_in_flight, rate, per, max_execution) to set back to none::

        brooq.alter_topic(conn, "report", max_lease=timedelta(minutes=20))
        brooq.alter_topic(conn, "audit", clear=["rate", "max_in_flight"])
    """
    return Statement(queries.ALTER_TOPIC, alter_topic_params(name, changes), ADMIN, TOPIC)


def pause_topic(name: str) -> Statement[bool]:
    """Stop claims of the topic's jobs (enqueue still takes them, jobs in flight settle);
    False when it was paused already (needs brooq_admin)."""
    return Statement(queries.PAUSE_TOPIC, [name], ADMIN, FLAG)


def resume_topic(name: str) -> Statement[bool]:
    """Let claims take the topic's jobs again; False when it was not paused (needs brooq_admin)."""
    return Statement(queries.RESUME_TOPIC, [name], ADMIN, FLAG)


def cancel(job_id: int) -> Statement[bool]:
    """Cancel a job that is not finished; False when it is terminal or unknown (needs brooq_admin)."""
    return Statement(queries.CANCEL, [job_id], ADMIN, FLAG)


def retry(job_id: int, *, rearm_children: bool = False, clear_steps: bool = False) -> Statement[bool]:
    """Re-drive a dead or canceled job back to pending, with a fresh budget of attempts;
    False when it is in another state or unknown (needs brooq_admin). Workflows:
    ``rearm_children`` makes the children its end canceled wait for it again (and their
    descendants canceled with them); by default they stay canceled. Durable steps: the
    steps it finished are kept (they return at once when it runs again);
    ``clear_steps`` deletes them, so that every step runs again."""
    return Statement(queries.RETRY, [job_id, rearm_children, clear_steps], ADMIN, FLAG)


def retry_dead(topic: str, *, include_canceled: bool = False, max_jobs: int = 1000,
               since: datetime | None = None, rearm_children: bool = False,
               clear_steps: bool = False) -> Statement[int]:
    """Re-drive the topic's dead jobs (and its canceled ones with ``include_canceled``),
    oldest first, those that became terminal at or after ``since`` when given, at most
    ``max_jobs`` (1 to 100000); returns how many. Jobs another transaction holds are
    skipped: call it again until it returns 0 (needs brooq_admin). ``rearm_children``
    and ``clear_steps``: as in retry, for each job re-driven."""
    return Statement(queries.RETRY_DEAD, [topic, include_canceled, max_jobs, since, rearm_children,
                                          clear_steps], ADMIN, COUNT)


def flush(topic: str, states: Sequence[str] = CLAIMABLE) -> Statement[int]:
    """Delete the topic's jobs in ``states`` at once, whatever their age; returns how many.
    By default the ones not yet run (pending, failed); ("done", "dead", "canceled") flushes the
    completed ones. Never a processing job (cancel it first). Needs brooq_admin."""
    if isinstance(states, str):  # it would be read as its letters
        raise InvalidArgument(f"states must be a list of states, not the string {states[:200]!r}")
    return Statement(queries.FLUSH, [topic, list(states)], ADMIN, COUNT)


def _job_id_or_none(value: Any) -> int | None:
    return None if value is None else int(value)


def schedule(name: str, cron: str, topic: str, payload: Any = None, *, priority: int = 0,
             ticker: str | None = None) -> Statement[int | None]:
    """Register (or update, by name) a periodic job: each tick of ``cron`` enqueues one
    job of ``topic`` with ``payload`` ({} when None) and ``priority``, exactly one per
    tick. ``ticker``: "pg_cron", "workers", or None: pg_cron where it is installed in
    the database and can run the schedule, else the workers. Returns the pg_cron job
    id, None when the workers tick it; PgCronMissing for "pg_cron" without pg_cron
    (needs brooq_admin)."""
    return Statement(queries.SCHEDULE,
                     [name, cron, topic, jsonb({} if payload is None else payload), priority, ticker],
                     ADMIN, Read(scalar_row, False, _job_id_or_none))


def unschedule(name: str) -> Statement[bool]:
    """Remove a schedule and its pg_cron job; False when no schedule has this name (needs
    brooq_admin)."""
    return Statement(queries.UNSCHEDULE, [name], ADMIN, FLAG)


def drop_topic(name: str, *, force: bool = False) -> Statement[int]:
    """Remove a topic and what is kept for it; returns how many jobs were deleted with it.
    Without ``force``, TopicInUse while it still has jobs or schedules; with it, they go
    too. UnknownTopic when there is no such topic (needs brooq_admin)."""
    return Statement(queries.DROP_TOPIC, [name, force], ADMIN, COUNT)
