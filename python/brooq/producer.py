"""Producer and admin helpers: thin calls of the brooq SQL functions.

Each one runs on the caller's psycopg connection, inside the caller's transaction
(in autocommit mode, each call commits by itself): "write my row and enqueue the
job" is one commit. Errors are mapped by SQLSTATE to :mod:`brooq.errors`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any, NamedTuple

import psycopg
from psycopg.rows import class_row, scalar_row
from psycopg.types.json import Jsonb

from brooq import queries, tracing
from brooq.errors import ADMIN, PRODUCER, WORKER, InvalidArgument, KeyBusy, UndecodableJob, mapped
from brooq.payload import Undecodable, guard_jsonb, jsonb
from brooq.rows import ChildJob, ParentJob, TopicStats
from brooq.settings import Topic, TopicSettings, parameters, takes_settings, topic_row
from brooq.states import STATES

Conn = psycopg.Connection[Any]


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


def enqueue(conn: Conn, topic: str, payload: Any, *, key: str | None = None,
            at: datetime | None = None, delay: timedelta | None = None,
            priority: int = 0, group: str | None = None,
            after: Sequence[int] | None = None, after_policy: str = "cancel") -> Enqueued:
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
    _sync(conn, "enqueue")
    args = enqueue_args(topic, payload, key, at, delay, priority, group)
    parents = after_args(after, after_policy)
    query = queries.ENQUEUE if not parents else queries.ENQUEUE_AFTER

    def call(trace_context: dict[str, str] | None) -> Enqueued:
        try:
            with mapped(PRODUCER, conn):
                row = conn.execute(query, [*args, trace_arg(trace_context), *parents]).fetchone()
        except KeyBusy as exc:
            raise key_busy(exc, topic, busy_what(key, group)) from exc.__cause__
        assert row is not None  # brooq.enqueue returns exactly one row
        return Enqueued._make(row)

    return tracing.send(topic, "enqueue", None, call)


def trace_arg(trace_context: dict[str, str] | None) -> Jsonb | None:
    """The trace_context parameter of brooq.enqueue/enqueue_many (see brooq.tracing)."""
    return None if trace_context is None else Jsonb(trace_context)


def enqueue_args(topic: str, payload: Any, key: str | None, at: datetime | None,
                 delay: timedelta | None, priority: int, group: str | None = None) -> list[Any]:
    """The parameters of queries.ENQUEUE (shared with brooq.aio)."""
    return [topic, jsonb(payload), key, at, priority, delay, group]


def after_args(after: Sequence[int] | None, after_policy: str) -> list[Any]:
    """The after and after_policy parameters of queries.ENQUEUE_AFTER (shared with brooq.aio);
    none for a job without parents, which takes queries.ENQUEUE."""
    return [] if after is None and after_policy == "cancel" else [None if after is None else list(after), after_policy]


def enqueue_many_args(topic: str, payloads: Iterable[Any], keys: Sequence[str | None] | None,
                      at: datetime | None, delay: timedelta | None, priority: int,
                      groups: Sequence[str | None] | None = None) -> list[Any]:
    """The parameters of queries.ENQUEUE_MANY (shared with brooq.aio)."""
    return [topic, [jsonb(p) for p in payloads], None if keys is None else list(keys), at,
            priority, delay, None if groups is None else list(groups)]


def edge_args(after: Sequence[tuple[int, int]] | None, after_policy: str) -> list[Any]:
    """The after_child, after_parent and after_policy parameters of
    queries.ENQUEUE_MANY_AFTER (shared with brooq.aio): ``after`` is (child, parent)
    pairs, the child an element from 1, the parent a job id or -k for element k of the
    same call. None for a call without edges, which takes queries.ENQUEUE_MANY."""
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


def _sync(conn: Any, helper: str) -> None:
    """A clear error for an AsyncConnection given to a sync helper (it would fail later,
    with "'coroutine' object has no attribute 'fetchone'")."""
    if isinstance(conn, psycopg.AsyncConnection):
        raise TypeError(f"brooq.{helper} takes a psycopg.Connection; on a psycopg.AsyncConnection "
                        f"use: from brooq import aio; await aio.{helper}(conn, ...)")


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


def enqueue_many(conn: Conn, topic: str, payloads: Iterable[Any], *,
                 keys: Sequence[str | None] | None = None, at: datetime | None = None,
                 delay: timedelta | None = None, priority: int = 0,
                 groups: Sequence[str | None] | None = None,
                 after: Sequence[tuple[int, int]] | None = None,
                 after_policy: str = "cancel") -> list[Enqueued]:
    """Enqueue many jobs of one topic in one statement; results in input order.
    ``groups``: one ordered group per payload (None: no group), see enqueue.
    ``after``: a workflow's edges, (child, parent) pairs: element ``child`` (from 1)
    waits for ``parent``, a job id or ``-k`` for element k of this call (an earlier
    one); ``after_policy`` for every child, as in enqueue."""
    _sync(conn, "enqueue_many")
    args = enqueue_many_args(topic, payloads, keys, at, delay, priority, groups)
    edges = edge_args(after, after_policy)
    query = queries.ENQUEUE_MANY if not edges else queries.ENQUEUE_MANY_AFTER

    def call(trace_context: dict[str, str] | None) -> list[Enqueued]:
        try:
            with mapped(PRODUCER, conn):
                rows = conn.execute(query, [*args, trace_arg(trace_context), *edges]).fetchall()
            return [Enqueued._make(row) for row in rows]
        except KeyBusy as exc:
            raise key_busy(exc, topic, busy_what_batch(groups)) from exc.__cause__

    return tracing.send(topic, "enqueue_many", len(args[1]), call)


@takes_settings(TopicSettings)
def declare_topic(conn: Conn, name: str, settings: TopicSettings) -> Topic:
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
    return declare_topic_settings(conn, name, settings)


def declare_topic_settings(conn: Conn, name: str, settings: TopicSettings) -> Topic:
    """declare_topic with the settings as one TopicSettings (a worker's registered ones)."""
    _sync(conn, "declare_topic")
    with mapped(ADMIN, conn):
        topic = conn.cursor(row_factory=topic_row).execute(
            queries.DECLARE_TOPIC, declare_topic_params(name, settings)).fetchone()
    assert topic is not None  # brooq.declare_topic returns one row
    return topic


def declare_topic_params(name: str, settings: TopicSettings) -> dict[str, Any]:
    """The parameters of queries.DECLARE_TOPIC (shared with brooq.aio)."""
    return {"name": name, **parameters(settings)}


def cancel(conn: Conn, job_id: int) -> bool:
    """Cancel a job that is not finished; False when it is terminal or unknown (needs brooq_admin)."""
    _sync(conn, "cancel")
    with mapped(ADMIN, conn):
        canceled = conn.cursor(row_factory=scalar_row).execute(queries.CANCEL, [job_id]).fetchone()
    return bool(canceled)


def get_job(conn: Conn, job_id: int) -> JobFate | None:
    """A job's fate in one SELECT, or None when no job has this id (never existed or purged).

    Reads the view brooq.jobs, which brooq_producer, brooq_worker and brooq_admin
    may read (the table brooq.job itself is private). UndecodableJob when its payload,
    result or progress is JSON that Python cannot decode.
    """
    _sync(conn, "get_job")
    if job_id is None:
        raise InvalidArgument("job_id must not be None")
    cur = conn.cursor(row_factory=class_row(JobFate))
    guard_jsonb(cur)
    with mapped(PRODUCER, conn):
        return decoded(cur.execute(queries.GET_JOB, [job_id]).fetchone())


def parents(conn: Conn, job_id: int) -> list[ParentJob]:
    """The parents of a job (workflows: ``enqueue(..., after=...)``) in one query, by id:
    a child's handler reads their states and results here, not one get_job per parent.
    Empty for a job without parents. A result Python cannot decode is a brooq.Undecodable."""
    _sync(conn, "parents")
    if job_id is None:
        raise InvalidArgument("job_id must not be None")
    cur = conn.cursor(row_factory=class_row(ParentJob))
    guard_jsonb(cur)
    with mapped(PRODUCER, conn):
        return cur.execute(queries.PARENTS, [job_id]).fetchall()


def children(conn: Conn, job_id: int, *, limit: int = 100) -> list[ChildJob]:
    """The jobs that wait (or waited) for a job, lowest ids first, at most ``limit`` (1 to
    10000; ask for one more than you show to learn whether there are more): their states
    and the parents each still waits for. Empty for a job without children."""
    _sync(conn, "children")
    if job_id is None:
        raise InvalidArgument("job_id must not be None")
    if not 1 <= limit <= 10000:
        raise InvalidArgument(f"limit {limit} is not between 1 and 10000")
    cur = conn.cursor(row_factory=class_row(ChildJob))
    with mapped(PRODUCER, conn):
        return cur.execute(queries.CHILDREN, [job_id, limit]).fetchall()


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


def list_jobs(conn: Conn, *, topic: str | Sequence[str] | None = None,
              states: Sequence[str] | None = None, limit: int = 50) -> list[JobFate]:
    """Jobs newest first (highest id), at most ``limit`` (1 to 10000), of ``topic`` (a
    name, or several) and in ``states`` when given: e.g. the dead ones with their last_error. A payload,
    result or progress Python cannot decode is given as a brooq.Undecodable (a str that
    says why): one such job never hides the others."""
    _sync(conn, "list_jobs")
    if not 1 <= limit <= 10000:
        raise InvalidArgument(f"limit {limit} is not between 1 and 10000")
    if states is not None and (bad := sorted(set(states) - set(STATES))):
        raise InvalidArgument(f"unknown state {bad[0][:40]!r}: one of {', '.join(STATES)}")
    cur = conn.cursor(row_factory=class_row(JobFate))
    guard_jsonb(cur)
    with mapped(PRODUCER, conn):
        return cur.execute(queries.LIST_JOBS, {
            "topics": None if topic is None else [topic] if isinstance(topic, str) else list(topic),
            "states": None if states is None else list(states),
            "limit": limit}).fetchall()


def topic_stats(conn: Conn) -> list[TopicStats]:
    """Depth and lag of every topic (brooq.topic_stats), ordered by topic."""
    _sync(conn, "topic_stats")
    with mapped(WORKER, conn):
        return conn.cursor(row_factory=class_row(TopicStats)).execute(queries.TOPIC_STATS).fetchall()
