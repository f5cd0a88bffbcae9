"""Make the database hold what an application declares in code (a brooq.Registry): its
topics with their settings, and its schedules. What `brooq declare` and `manage.py
brooq_declare` run, at deploy time.

:func:`plan` compares the registry with the database and lists the changes: a topic
or schedule to create, one whose settings (cron, payload, ...) to change, and the ones
the database holds and the code does not, which are deleted only when asked
(``prune``; else they are listed as ``unlisted``). :func:`declare` plans and applies
in one transaction of the caller's connection, or, ``dry_run``, applies and rolls
back: the database checks every value (a cron it cannot run, a setting out of range)
in a dry run too. A second run plans nothing. Every write is a call of brooq.admin
(declare_topic, schedule, unschedule, drop_topic): the database decides, as for any
admin. Needs brooq_admin.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import psycopg
from psycopg.rows import class_row

from brooq import admin, queries, settings
from brooq.errors import ADMIN, TopicInUse, mapped
from brooq.settings import Topic, TopicSettings


class Schedule(Protocol):
    """A schedule as declared in code (brooq.Schedule), read by its fields."""

    @property
    def name(self) -> str: ...
    @property
    def cron(self) -> str: ...
    @property
    def topic(self) -> str: ...
    @property
    def payload(self) -> Any: ...
    @property
    def priority(self) -> int: ...
    @property
    def ticker(self) -> str | None: ...


class Registry(Protocol):
    """What an application declares (brooq.Registry), read by its shape: brooq.tasks
    imports this module, never the other way."""

    @property
    def schedules(self) -> Sequence[Schedule]: ...

    def topics(self) -> dict[str, TopicSettings]: ...

    def check(self) -> None: ...

__all__ = ["Change", "ScheduleRow", "apply", "declare", "plan"]

Conn = psycopg.Connection[Any]
Kind = Literal["topic", "schedule"]
# create, change, delete: what the run writes (or, dry, would write); unlisted: in the
# database and not in the code, left alone (no prune); in_use: the same, pruned, and
# kept because the topic still has jobs (drop_topic refused it: TopicInUse).
Action = Literal["create", "change", "delete", "unlisted", "in_use"]
WRITES: tuple[Action, ...] = ("create", "change", "delete")


@dataclass(frozen=True)
class Change:
    """One difference between the code and the database, and what is done about it.
    ``values``: what a created one is made with (a topic's settings that are not the
    default; a schedule's cron, topic, payload, and priority and ticker when given);
    ``diffs``: what a changed one changes, (what, as stored, as declared)."""

    kind: Kind
    action: Action
    name: str
    values: tuple[tuple[str, Any], ...] = ()
    diffs: tuple[tuple[str, Any, Any], ...] = ()


@dataclass(frozen=True)
class ScheduleRow:
    """A schedule's definition as the view brooq.schedules holds it (its payload as JSON
    text, decoded here: Django's connection loads jsonb as text)."""

    name: str
    cron: str
    ticker: str
    topic: str
    payload: str
    priority: int


def _topic_values(s: TopicSettings) -> tuple[tuple[str, Any], ...]:
    default = TopicSettings()
    return tuple((name, getattr(s, name)) for name in settings.NAMES
                 if getattr(s, name) != getattr(default, name))


def _settings_diffs(old: TopicSettings, new: TopicSettings) -> tuple[tuple[str, Any, Any], ...]:
    return tuple((name, getattr(old, name), getattr(new, name))
                 for name in settings.NAMES if getattr(old, name) != getattr(new, name))


def _schedule_values(s: Schedule) -> tuple[tuple[str, Any], ...]:
    values: list[tuple[str, Any]] = [("cron", s.cron), ("topic", s.topic), ("payload", s.payload)]
    if s.priority:
        values.append(("priority", s.priority))
    if s.ticker is not None:
        values.append(("ticker", s.ticker))
    return tuple(values)


def _schedule_diffs(old: ScheduleRow, new: Schedule) -> tuple[tuple[str, Any, Any], ...]:
    pairs: list[tuple[str, Any, Any]] = [
        ("cron", old.cron, new.cron), ("topic", old.topic, new.topic),
        ("payload", json.loads(old.payload), new.payload), ("priority", old.priority, new.priority)]
    if new.ticker is not None:  # None: the database chooses, and whatever it chose stands
        pairs.append(("ticker", old.ticker, new.ticker))
    return tuple((name, a, b) for name, a, b in pairs if not _same(a, b))


def _same(a: Any, b: Any) -> bool:
    # Python says 1 == 1.0 == True, JSON does not: compare JSON texts
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _stored(conn: Conn) -> tuple[dict[str, Topic], dict[str, ScheduleRow]]:
    with mapped(ADMIN, conn):
        topics = conn.cursor(row_factory=settings.topic_row).execute(queries.DECLARED_TOPICS).fetchall()
        schedules = conn.cursor(row_factory=class_row(ScheduleRow)).execute(
            queries.DECLARED_SCHEDULES).fetchall()
    return {t.name: t for t in topics}, {s.name: s for s in schedules}


def plan(conn: Conn, registry: Registry, *, prune: bool = False) -> list[Change]:
    """What makes the database hold ``registry``: topics, then schedules, each by name;
    what the database holds beyond it is ``delete`` with ``prune``, else ``unlisted``.
    Reads only. InvalidArgument for a schedule of a topic the registry does not hold."""
    registry.check()
    topics, schedules = _stored(conn)
    wanted = registry.topics()
    gone: Action = "delete" if prune else "unlisted"
    changes: list[Change] = []
    for name, want in wanted.items():
        have = topics.get(name)
        if have is None:
            changes.append(Change("topic", "create", name, values=_topic_values(want)))
        elif have.settings != want:
            changes.append(Change("topic", "change", name, diffs=_settings_diffs(have.settings, want)))
    changes += [Change("topic", gone, name) for name in topics if name not in wanted]
    code = {s.name: s for s in registry.schedules}
    for name, s in code.items():
        row = schedules.get(name)
        if row is None:
            changes.append(Change("schedule", "create", name, values=_schedule_values(s)))
        elif diffs := _schedule_diffs(row, s):
            changes.append(Change("schedule", "change", name, diffs=diffs))
    changes += [Change("schedule", gone, name) for name in schedules if name not in code]
    return changes


def apply(conn: Conn, registry: Registry, changes: Iterable[Change]) -> list[Change]:
    """Write ``changes`` (of :func:`plan`) on ``conn``, in its transaction: schedules
    deleted first (a topic with schedules cannot go), then topics declared, schedules
    made, topics deleted, each in a savepoint: a topic that still has jobs is kept, its
    change becomes ``in_use`` (drop-topic --force deletes it with its jobs). Returns the
    changes as done."""
    todo = list(changes)
    wanted = registry.topics()
    code = {s.name: s for s in registry.schedules}
    done: dict[int, Change] = {}
    by_step = [("schedule", "delete"), ("topic", "create"), ("topic", "change"), ("schedule", "create"),
               ("schedule", "change"), ("topic", "delete")]
    for kind, action in by_step:
        for i, c in enumerate(todo):
            if (c.kind, c.action) != (kind, action):
                continue
            if kind == "schedule" and action == "delete":
                admin.unschedule(conn, c.name)
            elif kind == "topic" and action in ("create", "change"):
                admin.declare_topic_settings(conn, c.name, wanted[c.name])
            elif kind == "schedule":
                s = code[c.name]
                admin.schedule(conn, s.name, s.cron, s.topic, s.payload, priority=s.priority,
                               ticker=s.ticker)
            else:
                try:
                    with conn.transaction():
                        admin.drop_topic(conn, c.name)
                except TopicInUse:
                    done[i] = Change("topic", "in_use", c.name)
    return [done.get(i, c) for i, c in enumerate(todo)]


def declare(conn: Conn, registry: Registry, *, prune: bool = False, dry_run: bool = False) -> list[Change]:
    """Make the database hold ``registry`` (:func:`plan`, then :func:`apply`) in one
    transaction on ``conn`` (a savepoint inside the caller's): every change or none.
    ``dry_run``: the same, rolled back. Returns the changes (an empty list: the database
    held it already)."""
    changes: list[Change] = []
    with conn.transaction() as tx:
        changes = apply(conn, registry, plan(conn, registry, prune=prune))
        if dry_run:
            raise psycopg.Rollback(tx)
    return changes
