"""Durable steps: what a job finished, sleeps without a worker, waits for an event.

The SQL decides (brooq.checkpoint, brooq.sleep, brooq.wait_for_event, brooq.steps,
brooq.emit_event; docs/sql-api.md, "Durable steps"); this module calls it:

- ``emit_event`` and ``steps`` take the caller's connection (a producer emits in its own
  transaction, beside its own writes), sync and async;
- a ``StepStore`` is a worker's: the handlers' calls on connections of its own (opened
  on first use, kept idle for the next, one per handler running a call at the moment),
  fenced by the job's lease. ``Job.step``, ``Job.sleep`` and ``Job.wait_for_event``
  (brooq.job) use it.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from typing import Any, NamedTuple, Protocol

import psycopg
from psycopg.rows import class_row
from psycopg.types.json import Jsonb

from brooq import queries
from brooq.errors import PRODUCER, WORKER, translate, who
from brooq.payload import to_json

Conn = psycopg.Connection[Any]

IDLE_MAX = 4  # connections a store keeps open between calls


class Held(Protocol):
    """A claimed job, as far as its steps are concerned (brooq.Job is one): no import of
    brooq.job, which imports this module."""

    @property
    def id(self) -> int: ...
    @property
    def lease_token(self) -> int: ...


class Step(NamedTuple):
    """A row of brooq.steps: a step a job finished, or the wait it is in.

    kind: ``step`` (result: the handler's), ``sleep`` (result {"until": instant}),
    ``event`` (result: the payload received), ``timeout`` (result None), or ``waiting``
    (result {"event": name, "deadline": instant}; attempt None)."""

    name: str
    kind: str
    result: Any
    attempt: int | None
    at: datetime


class Emitted(NamedTuple):
    """The answer of emit_event: the event's id, and how many waiting jobs it made ready."""

    id: int
    woken: int


class Checkpointed(NamedTuple):
    result: Any
    created: bool


class Suspension(NamedTuple):
    state: str
    until: datetime


class Awaited(NamedTuple):
    outcome: str  # received, timeout, waiting
    payload: Any
    until: datetime | None


def _identity(text: Any) -> str:
    return str(text)


def _keep(keep: timedelta | float) -> timedelta:
    return keep if isinstance(keep, timedelta) else timedelta(seconds=float(keep))


def emit_event(conn: Conn, name: str, payload: Any = None, *,
               keep: timedelta | float = timedelta(days=1)) -> Emitted:
    """Emit the event ``name`` in the connection's transaction (commit it with your own
    writes): every job waiting for the name (``job.wait_for_event``) runs again and
    receives ``payload``; a job that starts waiting within ``keep`` (1 minute to 100
    years, default a day) receives it too. Needs brooq_producer."""
    args = [name, Jsonb(to_json(payload), dumps=_identity), _keep(keep)]
    try:
        row = conn.cursor(row_factory=class_row(Emitted)).execute(queries.EMIT_EVENT, args).fetchone()
    except psycopg.Error as exc:
        raise translate(exc, PRODUCER, who(conn)) or exc from None
    assert row is not None  # the SQL function returns one row, or raises
    return row


async def emit_event_async(conn: psycopg.AsyncConnection[Any], name: str, payload: Any = None, *,
                           keep: timedelta | float = timedelta(days=1)) -> Emitted:
    """emit_event on an asyncio connection."""
    args = [name, Jsonb(to_json(payload), dumps=_identity), _keep(keep)]
    try:
        cur = await conn.cursor(row_factory=class_row(Emitted)).execute(queries.EMIT_EVENT, args)
        row = await cur.fetchone()
    except psycopg.Error as exc:
        raise translate(exc, PRODUCER, "") or exc from None
    assert row is not None
    return row


def steps(conn: Conn, job_id: int, max_steps: int | None = None) -> list[Step]:
    """A job's finished steps, in the order finished, and the wait it is in (kind
    ``waiting``): what ``brooq job`` and the dashboard show; the first ``max_steps``
    only when given. Needs brooq_producer or brooq_worker."""
    query, args = (queries.STEPS, [job_id]) if max_steps is None else (queries.STEPS_FIRST, [job_id, max_steps])
    try:
        return conn.cursor(row_factory=class_row(Step)).execute(query, args).fetchall()
    except psycopg.Error as exc:
        raise translate(exc, PRODUCER, who(conn)) or exc from None


async def steps_async(conn: psycopg.AsyncConnection[Any], job_id: int) -> list[Step]:
    """steps on an asyncio connection."""
    cur = await conn.cursor(row_factory=class_row(Step)).execute(queries.STEPS, [job_id])
    return await cur.fetchall()


class StepStore:
    """A worker's connections for its handlers' durable steps (thread-safe)."""

    def __init__(self, worker: str, connect: Callable[[], Conn]) -> None:
        self.worker = worker
        self._connect = connect
        self._lock = threading.Lock()
        self._idle: list[Conn] = []
        self._closed = False

    @contextlib.contextmanager
    def _conn(self) -> Iterator[Conn]:
        with self._lock:
            conn = self._idle.pop() if self._idle else None
        if conn is None or conn.closed:
            conn = self._connect()
        try:
            yield conn
        except psycopg.Error as exc:
            if conn.broken or exc.sqlstate is None:
                conn.close()
            else:
                self._put(conn)
            raise translate(exc, WORKER, who(conn)) or exc from None
        except BaseException:
            conn.close()
            raise
        else:
            self._put(conn)

    def _put(self, conn: Conn) -> None:
        with self._lock:
            if not self._closed and len(self._idle) < IDLE_MAX:
                self._idle.append(conn)
                return
        conn.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            with contextlib.suppress(Exception):
                conn.close()

    def steps(self, job: Held) -> list[Step]:
        with self._conn() as conn:
            return conn.cursor(row_factory=class_row(Step)).execute(queries.STEPS, [job.id]).fetchall()

    def checkpoint(self, job: Held, name: str, result_json: str) -> Checkpointed | None:
        args = [self.worker, job.id, job.lease_token, name, Jsonb(result_json, dumps=_identity)]
        with self._conn() as conn:
            return conn.cursor(row_factory=class_row(Checkpointed)).execute(queries.CHECKPOINT, args).fetchone()

    def sleep(self, job: Held, step: str, until: datetime | None,
              duration: timedelta | None) -> Suspension | None:
        args = [self.worker, job.id, job.lease_token, step, until, duration]
        with self._conn() as conn:
            return conn.cursor(row_factory=class_row(Suspension)).execute(queries.SLEEP, args).fetchone()

    def wait_for_event(self, job: Held, step: str, event: str, timeout: timedelta) -> Awaited | None:
        args = [self.worker, job.id, job.lease_token, step, event, timeout]
        with self._conn() as conn:
            return conn.cursor(row_factory=class_row(Awaited)).execute(queries.WAIT_FOR_EVENT, args).fetchone()
