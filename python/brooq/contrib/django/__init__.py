"""brooq for Django: jobs enqueued on Django's own connection, in its transaction.

Add ``"brooq.contrib.django"`` to INSTALLED_APPS, on a database whose ENGINE is
``django.db.backends.postgresql`` running on psycopg 3. Then, in a view::

    with transaction.atomic():
        order = Order.objects.create(email=email)
        brooq.contrib.django.enqueue("email", {"order": order.id})   # both or neither

Handlers are functions decorated with :func:`handler` in the ``jobs`` module of an
installed app (or the modules named in ``BROOQ["HANDLERS"]``); ``manage.py
brooq_worker`` runs them with the worker of ``brooq worker``, its connection made from
DATABASES, its settings from the ``BROOQ`` dict of the settings module.
``manage.py brooq_deploy`` deploys the schema as ``brooq deploy`` does;
``manage.py brooq_declare`` makes the database hold the project's topics and schedules
(:func:`declare`), so that a view can enqueue before any worker ran. Typed tasks
(:func:`task`, or brooq.task and :func:`register`) are run and declared as handlers are.
See docs/django.md.
"""

from __future__ import annotations

import functools
import importlib
import inspect
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ParamSpec, Protocol, TypeVar, cast, overload

import psycopg
from django.conf import settings as django_settings  # type: ignore[import-untyped]
from django.core.exceptions import ImproperlyConfigured  # type: ignore[import-untyped]
from django.db import close_old_connections, connections  # type: ignore[import-untyped]
from psycopg import pq

import brooq
from brooq import calls, config, faces
from brooq.errors import ConfigError
from brooq.payload import PayloadLoader
from brooq.reconcile import Change
from brooq.redact import remember
from brooq.settings import HandlerSettings
from brooq.tasks import Registry, Schedule, Task, TaskDecorator

if TYPE_CHECKING:
    from brooq.tools.deploy import Deployed

__all__ = ["Settings", "Using", "alter_topic", "brooq_settings", "cancel", "children", "connection",
           "count_jobs", "declare", "declare_topic", "declare_topics", "deploy_schema", "drop_topic", "dsn",
           "enqueue", "enqueue_many", "flush", "get_job", "get_topic", "handler", "health", "list_jobs",
           "list_schedules", "parents", "pause_topic", "register", "registry", "resume_topic", "retry",
           "retry_dead", "schedule", "task", "topic_stats", "unschedule", "worker"]

F = TypeVar("F", bound=Callable[..., Any])
P = ParamSpec("P")
T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)

HANDLERS_MODULE = "jobs"  # imported from every installed app when BROOQ has no HANDLERS
_OWN_KEYS = ("DATABASE", "HANDLERS")  # the keys of BROOQ that are not worker settings
# settings.DATABASES[...]["OPTIONS"] that are Django's, not libpq's (get_connection_params
# drops some of them already)
_DJANGO_OPTIONS = frozenset({"client_encoding", "context", "cursor_factory", "prepare_threshold"})


@dataclass(frozen=True)
class Settings:
    """The ``BROOQ`` dict of Django's settings, read: the database alias brooq uses
    (``DATABASE``, default ``"default"``), the modules of handlers (``HANDLERS``; None:
    the ``jobs`` module of every installed app that has one), and the worker's settings
    (every other key: a field of brooq.WorkerConfig in upper case, ``CONCURRENCY``,
    ``LEASE``, ...; a duration as a timedelta or as text with a unit, ``"30s"``)."""

    database: str
    handlers: tuple[str, ...] | None
    worker: dict[str, Any]


def brooq_settings() -> Settings:
    """``settings.BROOQ``, checked: ConfigError listing every problem at once."""
    raw = getattr(django_settings, "BROOQ", None) or {}
    if not isinstance(raw, Mapping):
        raise ConfigError([f"settings.BROOQ: a dict, not {type(raw).__name__}"])
    fields = {f.name.upper(): f for f in config.SETTINGS if f.name != "dsn"}
    problems: list[str] = []
    worker: dict[str, Any] = {}
    for key, value in raw.items():
        if key in _OWN_KEYS:
            continue
        f = fields.get(key) if isinstance(key, str) else None
        if f is None:
            why = ("the worker's connection comes from DATABASES (BROOQ['DATABASE'] names the alias)"
                   if key == "DSN" else f"one of {', '.join([*_OWN_KEYS, *fields])}")
            problems.append(f"settings.BROOQ[{str(key)[:40]!r}]: unknown key; {why}")
            continue
        if isinstance(value, str):
            try:
                value = f.parse(value)
            except ValueError as exc:
                problems.append(f"settings.BROOQ[{key!r}]: {exc}")
                continue
        worker[f.name] = value
    database = raw.get("DATABASE", "default")
    if not isinstance(database, str) or not database:
        problems.append(f"settings.BROOQ['DATABASE']: a database alias, not {database!r}")
    handlers = raw.get("HANDLERS")
    if isinstance(handlers, str) or not (handlers is None or isinstance(handlers, Iterable)):
        problems.append("settings.BROOQ['HANDLERS']: a list of module names, "
                        f"like ['shop.jobs'], not {handlers!r}"[:200])
        handlers = None
    if problems:
        raise ConfigError(problems)
    return Settings(database, None if handlers is None else tuple(handlers), worker)


def _postgresql(using: str | None) -> Any:
    """Django's DatabaseWrapper of ``using`` (default: BROOQ['DATABASE']), refused unless
    it is PostgreSQL on psycopg 3."""
    alias = using or brooq_settings().database
    wrapper = connections[alias]
    engine = wrapper.settings_dict.get("ENGINE", "?")
    if wrapper.vendor != "postgresql":
        raise ImproperlyConfigured(
            f"brooq.contrib.django: database {alias!r} is {wrapper.vendor} ({engine}); brooq needs "
            "PostgreSQL: ENGINE 'django.db.backends.postgresql', with psycopg 3 installed "
            "(pip install 'psycopg[binary]')")
    if getattr(wrapper, "Database", None) is not psycopg:
        raise ImproperlyConfigured(
            f"brooq.contrib.django: database {alias!r} ({engine}) runs on psycopg2; brooq needs "
            "psycopg 3: pip install 'psycopg[binary]' (Django's postgresql backend takes it "
            "over psycopg2 when both are installed)")
    return wrapper


def connection(using: str | None = None) -> psycopg.Connection[Any]:
    """Django's psycopg connection of database ``using`` (default: BROOQ['DATABASE'],
    else ``"default"``), connected: every brooq helper takes it, and runs in Django's
    transaction (inside ``transaction.atomic``) or commits by itself (in Django's
    autocommit mode, outside one). ImproperlyConfigured for a database that is not
    PostgreSQL on psycopg 3.

    Django loads jsonb as text on its connections (its JSONField decodes it), so a
    brooq helper that reads JSON (``brooq.get_job``, ``brooq.list_jobs``) gives text
    there: use :func:`get_job` of this module, or your own connection."""
    wrapper = _postgresql(using)
    wrapper.ensure_connection()
    raw = wrapper.connection
    if not isinstance(raw, psycopg.Connection):  # a backend of its own, not Django's
        raise ImproperlyConfigured(f"brooq.contrib.django: the connection of database {using!r} "
                                   f"is a {type(raw).__name__}, not a psycopg.Connection")
    return raw


@functools.lru_cache(maxsize=1)
def _libpq_keywords() -> frozenset[str]:
    return frozenset(o.keyword.decode() for o in pq.Conninfo.get_defaults())


def dsn(using: str | None = None) -> str:
    """The libpq connection string of database ``using`` (default: BROOQ['DATABASE']),
    made from DATABASES by Django's own backend (NAME, USER, PASSWORD, HOST, PORT and
    the libpq parameters of OPTIONS, a service or sslmode): what the worker and
    brooq_deploy connect with. It holds the password, if DATABASES has one: brooq
    shows it in no message, and passes it to no command line (the deploy's sqitch or
    psql gets it in PGPASSWORD)."""
    params = _postgresql(using).get_connection_params()
    keywords = _libpq_keywords()
    kept = {k: str(v) for k, v in params.items()
            if k in keywords and k not in _DJANGO_OPTIONS and v is not None}
    conninfo = psycopg.conninfo.make_conninfo("", **kept)
    remember(conninfo)  # no brooq message of this process shows its password (brooq.redact)
    return conninfo


@contextmanager
def _json_decoded(conn: psycopg.Connection[Any]) -> Iterator[psycopg.Connection[Any]]:
    """Within this block, jsonb columns on Django's connection load as brooq loads them
    (Django registers a text loader on its connections); Django's loader after."""
    adapters = conn.adapters
    before = adapters.get_loader(adapters.types["jsonb"].oid, pq.Format.TEXT)
    adapters.register_loader("jsonb", PayloadLoader)
    try:
        yield conn
    finally:
        if before is not None:
            adapters.register_loader("jsonb", before)


# --- brooq's calls, on Django's connection ---------------------------------------------

class Using(Protocol[P, T_co]):
    """A call of brooq on Django's connection: the declaration's arguments, and ``using``,
    the database alias (default: BROOQ['DATABASE']). A type checker cannot add a keyword to
    the declared ones (PEP 612), hence two overloads: with ``using`` given, it checks only
    that one."""

    @overload
    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> T_co: ...

    @overload
    def __call__(self, *args: Any, using: str | None, **kwargs: Any) -> T_co: ...


def on_django(declaration: Callable[P, faces.Statement[T]]) -> Using[P, T]:
    """The face of a declaration of brooq.calls on Django's connection (see
    :func:`connection`): inside ``transaction.atomic`` the call commits or rolls back with
    the block. A call that reads JSON reads it as brooq does, not as Django's text."""

    def face(*args: Any, using: str | None = None, **kwargs: Any) -> T:
        st = declaration(*args, **kwargs)
        conn = connection(using)
        if not st.read.json:
            return faces.run(conn, st)
        with _json_decoded(conn):
            return faces.run(conn, st)

    faces.dress(face, declaration, __name__, among=[inspect.Parameter(
        "using", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=str | None)])
    return cast(Using[P, T], face)


enqueue = on_django(calls.enqueue)
enqueue_many = on_django(calls.enqueue_many)
get_job = on_django(calls.get_job)
parents = on_django(calls.parents)
children = on_django(calls.children)
list_jobs = on_django(calls.list_jobs)
count_jobs = on_django(calls.count_jobs)
topic_stats = on_django(calls.topic_stats)
get_topic = on_django(calls.get_topic)
declare_topic = on_django(calls.declare_topic)
alter_topic = on_django(calls.alter_topic)
pause_topic = on_django(calls.pause_topic)
resume_topic = on_django(calls.resume_topic)
cancel = on_django(calls.cancel)
retry = on_django(calls.retry)
retry_dead = on_django(calls.retry_dead)
flush = on_django(calls.flush)
schedule = on_django(calls.schedule)
unschedule = on_django(calls.unschedule)
list_schedules = on_django(calls.list_schedules)
drop_topic = on_django(calls.drop_topic)
health = on_django(calls.health)


# --- handlers and the worker ---------------------------------------------------------

_handlers: dict[str, tuple[Callable[..., Any], dict[str, Any]]] = {}


def handler(topic: str, **settings: Any) -> Callable[[F], F]:
    """Register the decorated function as the handler of ``topic`` for ``manage.py
    brooq_worker``. The keyword arguments are those of ``brooq.Worker.handler`` (the
    topic's settings and ``timeout``), checked now. A sync handler may use the ORM: its
    thread's stale database connections are closed before and after each job, as
    Django does around a request."""
    HandlerSettings(**settings)  # a misspelled setting fails at import, not at start

    def register(fn: F) -> F:
        known = _handlers.get(topic)
        if known is not None and _name(known[0]) != _name(fn):
            raise ValueError(f"topic {topic!r} already has a handler: {_name(known[0])}")
        _handlers[topic] = (fn, settings)
        return fn

    return register


_registry = Registry()  # what task() and register() hold


def task(topic: str, /, **settings: Any) -> TaskDecorator:
    """:func:`brooq.task` for ``manage.py brooq_worker`` and ``brooq_declare``: the
    decorated handler becomes a brooq.Task (``send.enqueue(connection(), payload)``
    checks the payload against its type), run and declared as a :func:`handler` is.
    Decorate it in the modules of BROOQ['HANDLERS'], else the ``jobs`` module of an
    installed app; ``@brooq.periodic`` above it schedules it."""
    return _registry.task(topic, **settings)


def register(*items: Task[Any] | Schedule | Registry) -> None:
    """Have ``manage.py brooq_worker`` run these tasks, and ``brooq_declare`` declare them
    and these schedules (a Registry: all it holds), from a module of BROOQ['HANDLERS'],
    else the ``jobs`` module of an installed app."""
    _registry.add(*items)


def registry() -> Registry:
    """What the project declares, its modules of handlers imported (BROOQ['HANDLERS'], else
    the ``jobs`` module of each installed app): a task of each :func:`handler`, and what
    :func:`task` and :func:`register` hold. ValueError for two handlers of a topic."""
    _import_handlers(brooq_settings().handlers)
    made = Registry(_registry)
    for topic, (fn, settings) in _handlers.items():
        made.add(Task(topic, fn, HandlerSettings(**settings)))
    return made


def _name(fn: Callable[..., Any]) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"


def _closing_connections(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A sync handler between two close_old_connections(), as Django runs a request;
    not inside an atomic block (a TestCase's, where brooq.testing.drain runs the
    handler in the test's thread), whose connection that would close, as Django's
    test client knows: a worker's thread is never in one."""
    if inspect.iscoroutinefunction(fn):
        return fn  # the ORM's async API runs its queries in threads of its own

    @functools.wraps(fn)  # the signature stays the handler's (its typed payload)
    def call(*args: Any, **kwargs: Any) -> Any:
        if any(c.in_atomic_block for c in connections.all(initialized_only=True)):
            return fn(*args, **kwargs)
        close_old_connections()
        try:
            return fn(*args, **kwargs)
        finally:
            close_old_connections()

    return call


def _import_handlers(modules: tuple[str, ...] | None) -> None:
    if modules is None:
        from django.utils.module_loading import (  # type: ignore[import-untyped]
            autodiscover_modules,
        )

        autodiscover_modules(HANDLERS_MODULE)
        return
    for module in modules:
        importlib.import_module(module)


def worker() -> brooq.Worker:
    """A brooq.Worker from Django's settings: it connects with :func:`dsn` of
    BROOQ['DATABASE'], takes the worker settings of BROOQ, and runs the handlers of
    :func:`handler`. ``manage.py brooq_worker`` runs it; so does ``brooq worker
    brooq.contrib.django:worker`` with DJANGO_SETTINGS_MODULE set."""
    from django.apps import apps  # type: ignore[import-untyped]

    if not apps.ready:
        import django  # type: ignore[import-untyped]

        django.setup()
    s = brooq_settings()
    made = brooq.Worker(dsn(s.database), **s.worker)
    made.dsn_from = f"settings.DATABASES[{s.database!r}]; settings.BROOQ['DATABASE'] picks the alias"
    tasks = registry().tasks
    if not tasks:
        where = (", ".join(s.handlers) if s.handlers
                 else f"the {HANDLERS_MODULE} module of an installed app")
        problem = f"no handlers: decorate a function with @brooq.contrib.django.handler('topic') in {where}"
        raise ConfigError([problem])
    for t in tasks:
        made.handler(t.topic, **t.handler_settings())(_closing_connections(t.fn))
    return made


def deploy_schema(apps: Any = None, schema_editor: Any = None, *, using: str | None = None,
                  method: str = "auto") -> Deployed:
    """Deploy brooq's schema into Django's database, as ``brooq deploy`` does (sqitch
    when it is installed, else psql): what ``manage.py brooq_deploy`` runs. Its first
    two parameters make it a migration's operation of yours:
    ``migrations.RunPython(deploy_schema, migrations.RunPython.noop)`` deploys into the
    migration's database. Raises brooq.tools.deploy.DeployError."""
    from brooq.tools.deploy import deploy

    alias = schema_editor.connection.alias if schema_editor is not None else using
    return deploy(dsn(alias), method=method)


def declare_topics(apps: Any = None, schema_editor: Any = None, *,
                   using: str | None = None) -> list[tuple[str, bool]]:
    """Declare the topics of the project (:func:`registry`: every handler's and task's,
    with its settings), as a worker with brooq_admin does when it starts, and nothing
    else (:func:`declare` makes the database hold its schedules too). Returns each topic
    with whether it was created (False: it existed, its settings set again). Its first
    two parameters make it a migration's operation, after :func:`deploy_schema`:
    ``migrations.RunPython(declare_topics, migrations.RunPython.noop)``. Needs
    brooq_admin (brooq.PermissionDenied)."""
    alias = schema_editor.connection.alias if schema_editor is not None else using
    topics = registry().topics()
    conn = connection(alias)
    existing = {name for (name,) in conn.execute(_EXISTING_TOPICS, [list(topics)]).fetchall()}
    for topic, settings in topics.items():
        _declare_topic_settings(topic, settings, using=alias)
    return [(topic, topic not in existing) for topic in topics]


def declare(apps: Any = None, schema_editor: Any = None, *, using: str | None = None,
            prune: bool = False, dry_run: bool = False) -> list[Change]:
    """Make the database hold the project's topics, with their settings, and its
    schedules (:func:`registry`), in one transaction: what ``manage.py brooq_declare``
    runs, at deploy time (brooq.reconcile.declare: what the database holds beyond them is
    deleted only with ``prune``; ``dry_run`` rolls back). Returns the changes. Its first
    two parameters make it a migration's operation, after :func:`deploy_schema`:
    ``migrations.RunPython(declare, migrations.RunPython.noop)``. Needs brooq_admin."""
    from brooq import reconcile

    alias = schema_editor.connection.alias if schema_editor is not None else using
    return reconcile.declare(connection(alias), registry(), prune=prune, dry_run=dry_run)


_EXISTING_TOPICS = "select t.name from brooq.topics t where t.name = any(%s)"
_declare_topic_settings = on_django(calls.declare_topic_settings)
