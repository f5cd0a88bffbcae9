"""Typed tasks: a handler, its topic, the topic's settings and the payload's type,
declared once, as one object that producers enqueue through and workers run.

    @brooq.task("email", max_attempts=5)
    def send(job: brooq.Job, mail: Email) -> None: ...

    send.enqueue(conn, Email(to="ann@example.com"), key="welcome:ann")   # checked, then enqueued
    worker.register(send)                                                 # its topic and settings

A producer names no topic (a misspelt one is a NameError, at import), and its payload is
checked against the handler's type before anything is written (brooq.typed.check: a
wrong type, a missing or misspelt field raises PayloadMismatch naming the field).
Schedules are declared in code too (:func:`periodic`, :class:`Schedule`), and a
:class:`Registry` holds an application's tasks, topics and schedules: `brooq declare`
and ``Registry.declare`` make the database hold them (brooq.reconcile).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, overload

import psycopg

from brooq import aio, producer, typed
from brooq.calls import Enqueued
from brooq.errors import InvalidArgument
from brooq.job import Job
from brooq.payload import PayloadMismatch, to_json
from brooq.settings import HandlerSettings, TopicSettings, topic_settings

if TYPE_CHECKING:
    from brooq.reconcile import Change

__all__ = ["PayloadMismatch", "Registry", "Schedule", "Task", "periodic", "register", "task"]

T = TypeVar("T")
Conn = psycopg.Connection[Any]
AsyncConn = psycopg.AsyncConnection[Any]

# The names the database accepts (brooq.declare_topic, brooq.schedule: 22023 else),
# checked here too so that a bad one fails at import, not at the deploy.
TOPIC_NAME = re.compile(r"[a-z0-9._-]{1,128}")
SCHEDULE_NAME = re.compile(r"[a-z0-9._-]{1,48}")
TICKERS = ("pg_cron", "workers")


def _check_topic(topic: Any) -> str:
    if not isinstance(topic, str) or not TOPIC_NAME.fullmatch(topic):
        raise InvalidArgument(f"invalid topic name {str(topic)[:200]!r}: use 1 to 128 lowercase letters, "
                              "digits, '.', '-' or '_'")
    return topic


def _name_of(tp: Any) -> str:
    return getattr(tp, "__name__", str(tp))


def _qualname(fn: Callable[..., Any]) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"


class Task(Generic[T]):
    """A handler with its topic, its topic's settings and its payload's type (the handler's
    second parameter, as brooq.typed decodes it: a dataclass, a TypedDict, a pydantic
    model; Any when it has no such annotation, and when it takes the job alone). Made by
    :func:`task` or ``Registry.task``. Calling it calls the handler."""

    def __init__(self, topic: str, fn: Callable[..., Any], settings: HandlerSettings) -> None:
        functools.update_wrapper(self, fn)  # its name, doc and signature (first: it copies fn's __dict__)
        self.topic: str = _check_topic(topic)
        self.fn = fn
        self.settings = settings
        kind = typed.payload_type(fn)
        self.payload_type: Any = Any if kind is None else kind
        self.schedules: tuple[Schedule, ...] = ()  # brooq.periodic

    def __repr__(self) -> str:
        return f"<brooq.Task {self.topic} {_qualname(self.fn)}>"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    @property
    def topic_settings(self) -> TopicSettings:
        """The settings the topic is declared with (the task's, without ``timeout``)."""
        return topic_settings(self.settings)

    def handler_settings(self) -> dict[str, Any]:
        """The keyword arguments of Worker.handler that register it: its settings."""
        return {f.name: getattr(self.settings, f.name) for f in dataclasses.fields(self.settings)}

    # --- producing ------------------------------------------------------------------

    def check(self, payload: T, *, where: str = "") -> T:
        """``payload`` as this task's handler will receive it, or PayloadMismatch naming the
        task, the type and the field: the payload is encoded as enqueue encodes it and
        decoded as the worker decodes it, strictly (a key the type does not declare is
        refused). A payload of another class than the type is refused as such. Returns
        ``payload`` itself."""
        tp = self.payload_type
        if tp is Any:
            return payload
        name = _name_of(tp)
        at = f"{where}: " if where else ""
        a_class = dataclasses.is_dataclass(tp) or typed.is_pydantic(tp)  # a TypedDict is a dict
        if a_class and not isinstance(payload, (tp, Mapping)) and (
                dataclasses.is_dataclass(payload) or typed.is_pydantic(type(payload))):
            raise PayloadMismatch(f"task {self.topic}: {at}a {type(payload).__name__} payload, "
                                  f"where the task takes {name}")
        try:
            value = json.loads(to_json(payload))
        except (TypeError, ValueError) as exc:
            raise PayloadMismatch(f"task {self.topic}: {at}the payload is not JSON: {exc}") from None
        try:
            typed.check(value, tp)
        except PayloadMismatch as exc:
            raise PayloadMismatch(f"task {self.topic}: {at}payload does not fit {name}: {exc}") from None
        return payload

    def _checked_all(self, payloads: Iterable[T]) -> list[T]:
        return [self.check(p, where=f"payloads[{i}]") for i, p in enumerate(payloads)]

    def enqueue(self, conn: Conn, payload: T, *, key: str | None = None, at: datetime | None = None,
                delay: timedelta | None = None, priority: int = 0, group: str | None = None,
                after: Sequence[int] | None = None, after_policy: str = "cancel") -> Enqueued:
        """brooq.enqueue of a job of this task's topic, its payload checked first
        (:meth:`check`); the options are brooq.enqueue's."""
        return producer.enqueue(conn, self.topic, self.check(payload), key=key, at=at, delay=delay,
                                priority=priority, group=group, after=after, after_policy=after_policy)

    async def enqueue_async(self, conn: AsyncConn, payload: T, *, key: str | None = None,
                            at: datetime | None = None, delay: timedelta | None = None,
                            priority: int = 0, group: str | None = None,
                            after: Sequence[int] | None = None, after_policy: str = "cancel") -> Enqueued:
        """:meth:`enqueue` on a psycopg.AsyncConnection (brooq.aio.enqueue)."""
        return await aio.enqueue(conn, self.topic, self.check(payload), key=key, at=at, delay=delay,
                                 priority=priority, group=group, after=after, after_policy=after_policy)

    def enqueue_many(self, conn: Conn, payloads: Iterable[T], *, keys: Sequence[str | None] | None = None,
                     at: datetime | None = None, delay: timedelta | None = None, priority: int = 0,
                     groups: Sequence[str | None] | None = None,
                     after: Sequence[tuple[int, int]] | None = None,
                     after_policy: str = "cancel") -> list[Enqueued]:
        """brooq.enqueue_many of this task's topic, every payload checked first (the error
        names its index: ``payloads[3]``); the options are brooq.enqueue_many's."""
        return producer.enqueue_many(conn, self.topic, self._checked_all(payloads), keys=keys, at=at,
                                     delay=delay, priority=priority, groups=groups, after=after,
                                     after_policy=after_policy)

    async def enqueue_many_async(self, conn: AsyncConn, payloads: Iterable[T], *,
                                 keys: Sequence[str | None] | None = None, at: datetime | None = None,
                                 delay: timedelta | None = None, priority: int = 0,
                                 groups: Sequence[str | None] | None = None,
                                 after: Sequence[tuple[int, int]] | None = None,
                                 after_policy: str = "cancel") -> list[Enqueued]:
        """:meth:`enqueue_many` on a psycopg.AsyncConnection (brooq.aio.enqueue_many)."""
        return await aio.enqueue_many(conn, self.topic, self._checked_all(payloads), keys=keys, at=at,
                                      delay=delay, priority=priority, groups=groups, after=after,
                                      after_policy=after_policy)


class TaskDecorator:
    """What ``@brooq.task(topic, ...)`` applies to a handler: a :class:`Task` of it."""

    def __init__(self, topic: str, settings: HandlerSettings,
                 then: Callable[[Task[Any]], None] | None = None) -> None:
        self.topic = _check_topic(topic)
        self.settings = settings
        self.then = then

    @overload
    def __call__(self, fn: Callable[[Job, T], Any]) -> Task[T]: ...

    @overload
    def __call__(self, fn: Callable[[Job], Any]) -> Task[Any]: ...

    def __call__(self, fn: Callable[..., Any]) -> Task[Any]:
        if isinstance(fn, Task):
            raise TypeError(f"@brooq.task({self.topic!r}) is applied to a task already "
                            f"({fn.topic}): a handler is one task")
        made: Task[Any] = Task(self.topic, fn, self.settings)
        if self.then is not None:
            self.then(made)
        return made


def task(topic: str, /, **settings: Any) -> TaskDecorator:
    """Make the decorated handler a :class:`Task` of ``topic``: ``task.enqueue(conn,
    payload)`` enqueues a job of the topic, the payload checked against the handler's
    type, and ``worker.register(task)`` runs it. The keyword arguments are those of
    ``Worker.handler`` (the topic's settings, brooq.TopicSettings, and ``timeout``),
    checked now: a misspelt one is a TypeError at import."""
    return TaskDecorator(topic, HandlerSettings(**settings))


@dataclass(frozen=True, init=False)
class Schedule:
    """A periodic job declared in code (brooq.schedule's arguments): each tick of ``cron``
    enqueues one job of ``topic`` (a :class:`Task`, whose type checks the payload now, or
    a topic's name) with ``payload`` ({} when None) and ``priority``; ``ticker``
    "pg_cron", "workers", or None (pg_cron where it can run it, else the workers).
    ``payload`` is kept as its JSON value."""

    name: str
    cron: str
    topic: str
    payload: Any
    priority: int
    ticker: str | None

    def __init__(self, name: str, cron: str, topic: str | Task[Any], payload: Any = None, *,
                 priority: int = 0, ticker: str | None = None) -> None:
        if not isinstance(name, str) or not SCHEDULE_NAME.fullmatch(name):
            raise InvalidArgument(f"invalid schedule name {str(name)[:200]!r}: use 1 to 48 lowercase "
                                  "letters, digits, '.', '-' or '_'")
        if not isinstance(cron, str) or not cron.strip():
            raise InvalidArgument(f"schedule {name}: cron must be a schedule such as '*/5 * * * *', "
                                  f"not {cron!r}")
        if ticker not in (*TICKERS, None):
            raise InvalidArgument(f"schedule {name}: ticker {ticker!r} is none of pg_cron, workers, None")
        if isinstance(priority, bool) or not isinstance(priority, int):
            raise InvalidArgument(f"schedule {name}: priority must be an integer, not {priority!r}")
        payload = {} if payload is None else payload
        if isinstance(topic, Task):
            topic.check(payload, where=f"schedule {name}")
            topic = topic.topic
        try:
            value = json.loads(to_json(payload))
        except (TypeError, ValueError) as exc:
            raise InvalidArgument(f"schedule {name}: the payload is not JSON: {exc}") from None
        for attr, v in (("name", name), ("cron", cron), ("topic", _check_topic(topic)),
                        ("payload", value), ("priority", priority), ("ticker", ticker)):
            object.__setattr__(self, attr, v)


def periodic(cron: str, *, name: str | None = None, payload: Any = None, priority: int = 0,
             ticker: str | None = None) -> Callable[[Task[T]], Task[T]]:
    """Schedule the decorated task: each tick of ``cron`` enqueues one job of it with
    ``payload`` (checked against the task's type now), under the schedule ``name``
    (default: the task's topic). Goes above ``@brooq.task``; several may be stacked, each
    with its own name. A :class:`Registry` holding the task holds its schedules, and
    `brooq declare` makes the database hold them."""

    def attach(made: Task[T]) -> Task[T]:
        if not isinstance(made, Task):
            raise TypeError(f"@brooq.periodic({cron!r}) schedules a task: put it above @brooq.task(...), "
                            f"not on {type(made).__name__} {getattr(made, '__qualname__', '')}".rstrip())
        made.schedules += (Schedule(name or made.topic, cron, made, payload, priority=priority,
                                    ticker=ticker),)
        return made

    return attach


class Registry:
    """What an application declares: its tasks (each with its topic and settings), topics
    without a task here (another service's handlers, SQL producers), and schedules.

    ``brooq declare --app MODULE:OBJECT`` and :meth:`declare` make the database hold them
    (creating and changing topics and schedules, deleting the others only when asked);
    ``worker.register(registry)`` runs its tasks."""

    def __init__(self, *items: Task[Any] | Schedule | Registry) -> None:
        self._tasks: dict[str, Task[Any]] = {}
        self._topics: dict[str, TopicSettings] = {}
        self._schedules: dict[str, Schedule] = {}
        self.add(*items)

    def __repr__(self) -> str:
        return (f"<brooq.Registry tasks {sorted(self._tasks)} topics {sorted(self._topics)} "
                f"schedules {sorted(self._schedules)}>")

    def add(self, *items: Task[Any] | Schedule | Registry) -> None:
        """Hold these tasks (with their schedules), schedules, and what other registries hold.
        ValueError for a second task of a topic, a topic declared twice with other settings,
        or a second schedule of a name."""
        for item in items:
            if isinstance(item, Registry):
                self.add(*item._tasks.values(), *item._schedules.values())
                for name, s in item._topics.items():
                    self._add_topic(name, s)
            elif isinstance(item, Task):
                self._add_task(item)
            elif isinstance(item, Schedule):
                self._add_schedule(item)
            else:
                raise TypeError(f"a Registry holds brooq.Task, brooq.Schedule and brooq.Registry, "
                                f"not {type(item).__name__}")

    def _add_task(self, made: Task[Any]) -> None:
        known = self._tasks.get(made.topic)
        if known is not None and known is not made:
            raise ValueError(f"topic {made.topic} has two tasks: {_qualname(known.fn)} and {_qualname(made.fn)}")
        if made.topic in self._topics and self._topics[made.topic] != made.topic_settings:
            raise ValueError(f"topic {made.topic} is declared with other settings than its task's")
        self._tasks[made.topic] = made

    def _add_topic(self, name: str, settings: TopicSettings) -> None:
        known = self._tasks[name].topic_settings if name in self._tasks else self._topics.get(name)
        if known is not None and known != settings:
            raise ValueError(f"topic {name} is declared twice, with other settings")
        if name not in self._tasks:
            self._topics[name] = settings

    def _add_schedule(self, schedule: Schedule) -> None:
        known = {s.name: s for s in self.schedules}.get(schedule.name)
        if known is not None and known != schedule:
            raise ValueError(f"schedule {schedule.name} is declared twice: {known} and {schedule}")
        self._schedules[schedule.name] = schedule

    def task(self, topic: str, /, **settings: Any) -> TaskDecorator:
        """:func:`brooq.task`, the task held by this registry."""
        return TaskDecorator(topic, HandlerSettings(**settings), self._add_task)

    def topic(self, name: str, /, **settings: Any) -> None:
        """Hold a topic without a task here, with its settings (brooq.TopicSettings'
        keyword arguments): its handlers run elsewhere, or only a schedule enqueues here."""
        self._add_topic(_check_topic(name), TopicSettings(**settings))

    def schedule(self, name: str, cron: str, topic: str | Task[Any], payload: Any = None, *,
                 priority: int = 0, ticker: str | None = None) -> Schedule:
        """Hold a :class:`Schedule` (of a task, or of a topic this registry holds)."""
        made = Schedule(name, cron, topic, payload, priority=priority, ticker=ticker)
        if isinstance(topic, Task):
            self._add_task(topic)
        self._add_schedule(made)
        return made

    @property
    def tasks(self) -> list[Task[Any]]:
        """The tasks, by topic."""
        return [self._tasks[t] for t in sorted(self._tasks)]

    @property
    def schedules(self) -> list[Schedule]:
        """The schedules, by name: those added, and the tasks' (brooq.periodic, read now:
        a task may be scheduled after it joined). ValueError for two of one name."""
        every = dict(self._schedules)
        for made in self._tasks.values():
            for schedule in made.schedules:
                known = every.setdefault(schedule.name, schedule)
                if known != schedule:
                    raise ValueError(f"schedule {schedule.name} is declared twice: {known} and {schedule}")
        return [every[n] for n in sorted(every)]

    def topics(self) -> dict[str, TopicSettings]:
        """Every topic declared here, by name, with its settings: the tasks' and the others."""
        every = {name: t.topic_settings for name, t in self._tasks.items()} | self._topics
        return dict(sorted(every.items()))

    def empty(self) -> bool:
        """Whether it holds nothing at all (`brooq declare` refuses it: a wrong OBJECT would
        otherwise find every topic and schedule of the database unlisted, or delete them)."""
        return not (self._tasks or self._topics or self._schedules)

    def check(self) -> None:
        """InvalidArgument for a schedule whose topic this registry does not hold (a typo
        would schedule a topic nobody declares); ValueError for two schedules of a name."""
        topics = self.topics()
        for s in self.schedules:
            if s.topic not in topics:
                raise InvalidArgument(f"schedule {s.name}: its topic {s.topic} is neither a task's nor a "
                                      "topic of the registry (Registry.topic declares one)")

    def declare(self, conn: Conn, *, prune: bool = False, dry_run: bool = False) -> list[Change]:
        """Make the database hold this registry's topics and schedules, in one transaction
        on ``conn``: brooq.reconcile.declare. Needs brooq_admin."""
        from brooq.reconcile import declare  # brooq.reconcile reads a registry by its shape only

        return declare(conn, self, prune=prune, dry_run=dry_run)


class HandlerHost(Protocol):
    """What register needs of a worker (brooq.Worker): its handler decorator; read by its
    shape, so that brooq.worker imports this module and never the other way."""

    @property
    def handler(self) -> Callable[..., Callable[[Callable[..., Any]], Any]]: ...


def register(worker: HandlerHost, *items: Task[Any] | Registry) -> None:
    """Register tasks on a worker (``worker.register(send, ...)``): each handler with its
    topic and settings, as ``@worker.handler(topic, **settings)`` does; a Registry's tasks
    all. Its schedules are the database's: the workers tick them wherever they run."""
    for item in items:
        for made in item.tasks if isinstance(item, Registry) else [item]:
            if not isinstance(made, Task):
                raise TypeError(f"worker.register takes brooq.Task and brooq.Registry, not "
                                f"{type(made).__name__} (a plain handler: @worker.handler(topic))")
            worker.handler(made.topic, **made.handler_settings())(made.fn)
