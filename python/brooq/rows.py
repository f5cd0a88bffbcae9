"""Typed rows read by column name: those on the worker's hot path, brooq.topic_stats's
(the client's topic_stats and the worker's gauges both read it), and the rows of the
client's other reads (parents, children, list_schedules, health).

psycopg's class_row builds each row as cls(**dict(zip(names, values))): 1.3 us a row
against 0.4 us for cls(*values), measured on Job, which is a few percent of a
drained job. fields_row checks the result's column names against the class's
parameters once per result, then builds every row positionally: a query whose
columns drift from the class fails at once, by name, and a row costs what a tuple
did (a NamedTuple is made by its _make, which skips the keyword handling of its
__new__). Cold paths (a job's fate, topic stats) use class_row itself.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any, NamedTuple, TypeVar

from psycopg import Cursor
from psycopg.rows import RowFactory, RowMaker

T = TypeVar("T")


def fields_row(cls: Callable[..., T]) -> RowFactory[T]:
    """A row factory making ``cls(*values)`` once the columns are checked to be, by name
    and in order, the parameters of ``cls``."""
    expected = [p for p in inspect.signature(cls).parameters if p != "self"]
    # a NamedTuple's __new__ is a Python lambda (~1 us); _make is tuple.__new__ itself
    make_tuple: Callable[[Sequence[Any]], T] | None = getattr(cls, "_make", None)

    def factory(cursor: Cursor[Any]) -> RowMaker[T]:
        description = cursor.description
        names = [] if description is None else [c.name for c in description]
        if description is not None and names != expected:
            raise TypeError(f"columns {names} are not the fields of {getattr(cls, '__name__', cls)}"
                            f" {expected}")

        def make(values: Sequence[Any]) -> T:
            return cls(*values)

        return make_tuple if make_tuple is not None else make

    return factory


class TopicStats(NamedTuple):
    """One row of brooq.topic_stats: depth and lag of a topic."""

    topic: str
    paused: bool
    pending: int
    failed: int
    ready: int
    scheduled: int
    processing: int
    expired: int
    oldest_ready_age: timedelta | None
    max_in_flight: int | None = None  # the flow limits (None: none), see declare_topic
    rate: int | None = None
    per: timedelta | None = None
    held_by_in_flight: int = 0  # ready jobs a claim now would not get because of max_in_flight
    held_by_rate: int = 0  # ... because of the rate
    held_by_group: int = 0  # ready jobs of an ordered group waiting for an earlier job of it
    waiting: int = 0  # jobs waiting for their parents (workflows), never claimed until they finish


class Reaped(NamedTuple):
    """A row of brooq.reap: a job whose expired lease went back to the queue."""

    id: int
    topic: str


class ParentJob(NamedTuple):
    """A parent of a job (brooq.parents): its state, and its result or last_error."""

    id: int
    topic: str
    state: str
    result: Any
    last_error: str | None
    updated_at: datetime


class ChildJob(NamedTuple):
    """A job that waits (or waited) for a job (brooq.children): its state, and how many of
    its parents have not finished yet."""

    id: int
    topic: str
    state: str
    parents_left: int
    after_policy: str
    last_error: str | None
    updated_at: datetime


class ScheduleStatus(NamedTuple):
    """A row of brooq.schedules: a periodic job's definition, who ticks it, its next and
    last tick, and the state of the last job it enqueued (None once that job is purged)."""

    name: str
    cron: str
    ticker: str
    topic: str
    payload: Any
    priority: int
    created_at: datetime
    updated_at: datetime
    next_tick_at: datetime | None
    last_tick_at: datetime | None
    last_job_id: int | None
    last_job_state: str | None
    last_error: str | None


class HealthCheck(NamedTuple):
    """A row of brooq.health(): a check's name, its status (ok, warn or fail) and what it saw."""

    name: str
    status: str
    detail: str


class ParentState(NamedTuple):
    """A parent of a claimed job (Job.parents), as the claim hands it: its id, topic and
    state, never its result (brooq.parents reads results on request)."""

    id: int
    topic: str
    state: str


def parent_states(parents: list[dict[str, Any]]) -> tuple[ParentState, ...]:
    """The ParentState rows of the JSON array brooq.claim hands a job with parents."""
    return tuple(ParentState(p["id"], p["topic"], p["state"]) for p in parents)
