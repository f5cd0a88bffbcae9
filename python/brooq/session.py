"""The worker's session with the database: its connections, and what it checks and
declares when a run first connects.

The loop's connection is opened here, with the settings every worker connection
gets (keepalives, the statement timeout, no prepared statements through a transaction
pooler); the settling thread's and the listener's are opened with the same. The
first connection of a run checks the schema version (brooq.schema_check), declares the
registered topics (a topic it creates is said at WARNING: a typo's would stay unseen;
a worker that may not declare topics refuses one that does not exist, before saying
anything else of it) and reads each topic's max_execution, refusing a handler whose
timeout is longer. A connection lost later is reopened with exponential backoff:
the loop decides when to try (``next_connect``), this says so once, then every
REMIND_EVERY.

Errors that retrying cannot help (a DSN that never connected, an older schema, a
topic setting the database refuses, a missing right) are raised as BrooqError;
a lost connection as the psycopg error it is. Before the first connection of a run, a
database that is unreachable or starting up (``transient``) is waited for, with the
same backoff, for up to start_timeout; any other failure to connect (a wrong
password, database or role, a DSN libpq refuses) is raised at once.
"""

from __future__ import annotations

import contextlib
import logging
import random
import re
import time
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

import psycopg

from brooq import queries
from brooq._version import __version__
from brooq.attempt import TopicHandler
from brooq.config import WorkerConfig, format_duration
from brooq.errors import WORKER, BrooqError, ConfigError, ConnectError, PermissionDenied, mapped
from brooq.listener import RECONNECT_MAX, backoff
from brooq.messages import _, closest
from brooq.payload import register_loaders
from brooq.producer import declare_topic_settings
from brooq.redact import one_line
from brooq.schema_check import check_schema

log = logging.getLogger("brooq.worker")

Conn = psycopg.Connection[Any]

REMIND_EVERY = 60.0  # seconds between "still no database connection" warnings
DSN_FROM = "brooq.Worker(dsn), --dsn or BROOQ_DSN"  # where a worker's DSN comes from, by default
CONNECT_HINT = ("check the DSN ({dsn_from}): host, port, database "
                "name, user and password, and that the server is up; a worker that has never "
                "connected waits start_timeout for a server that is unreachable or starting up, "
                "and retries nothing else")
TOPIC_NAMES = "select t.name from brooq.topics t"
# What libpq and psycopg say (in English) when a connection could not be opened for a
# reason that may pass by itself: no server listening yet, a server starting up or
# shutting down (57P03), full (53300), or a standby where a primary was asked for
# (target_session_attrs), a network or a name not there yet (a container's host name
# resolves once it runs). A connection failure carries no SQLSTATE in psycopg: the
# text is all there is. Anything else (a wrong password, database or role, a DSN
# libpq refuses, and any message in another language) stops a worker that has never
# connected at once.
TRANSIENT_CONNECT = (
    "connection refused", "no such file or directory",  # a TCP port, a Unix socket: no server
    "the database system is starting up", "the database system is shutting down",
    "the database system is in recovery mode", "the database system is not yet accepting",
    "the database system is not accepting connections",
    "too many clients", "remaining connection slots are reserved",
    "session is read-only", "server is in hot standby mode", "server is not in hot standby mode",
    "timeout expired", "timed out", "no route to host", "network is unreachable",
    "host is unreachable", "connection reset", "server closed the connection unexpectedly",
    "failed to resolve host", "could not translate host name", "name or service not known",
    "temporary failure in name resolution",
)
# A standby that is read-only after all (no target_session_attrs), and a server going
# away between the connection and the first statements: the server is there, the
# connection is not usable yet.
TRANSIENT_SQLSTATES = frozenset({"25006", "57P01", "57P02", "57P03", "53300"})


# How psycopg words a failure of a DSN of several hosts (host=a,b): the last host's
# failure, this line, then each host's failure on a line of its own, "- host: ...".
EACH_HOST_FAILED = "Multiple connection attempts failed. All failures were:"


def host_failures(exc: BaseException) -> list[str]:
    """The failure of each host a connection tried ("host: 'a', port: ...: why"), for a
    DSN of several hosts; [str(exc)] for one host."""
    text = str(exc)
    _last, listed, hosts = text.partition(EACH_HOST_FAILED)
    failures = [f for f in re.split(r"^- (?=host: )", hosts, flags=re.MULTILINE) if f.strip()]
    return failures if listed and failures else [text]


def may_pass(failure: str) -> bool:
    """Whether a host's failure to connect reads as one that may pass by itself."""
    text = failure.lower()
    return any(words in text for words in TRANSIENT_CONNECT)


def transient(exc: BaseException) -> bool:
    """Whether a failure to open the first connection may pass by itself (see
    TRANSIENT_CONNECT): a worker waits for it; any other stops the worker at once.
    Behind several hosts, only when each host's failure may pass: a wrong password or
    database refused by one (a standby while the primary is down) is as definitive as
    from a DSN of that host alone."""
    sqlstate = getattr(exc, "sqlstate", None)
    if sqlstate is not None:
        return sqlstate in TRANSIENT_SQLSTATES or sqlstate.startswith("08")
    if not isinstance(exc, psycopg.OperationalError):
        return False  # ProgrammingError: a DSN libpq cannot parse
    return all(may_pass(failure) for failure in host_failures(exc))


class Session:
    """The loop's connection during one run, and how to open the worker's others."""

    def __init__(self, name: str, config: WorkerConfig, handlers: Mapping[str, TopicHandler]) -> None:
        self.name = name
        self.config = config
        self._handlers = handlers  # the worker's registration, read only
        self.conn: Conn | None = None  # the loop's, while it is connected
        # each topic's max_execution as the database holds it, read at the first connection
        self.max_execution: dict[str, timedelta | None] = {}
        self.next_connect = 0.0  # when to try again, after a lost connection (monotonic)
        self._declared = False
        self._failures = 0
        self._connected_once = False  # before: a failure to connect is a configuration error
        self._lost_at = 0.0  # when the connection was lost (monotonic), while it is
        self._next_reminder = 0.0
        self._waiting_since: float | None = None  # the first failed try, before the first connection
        self.dsn_from = DSN_FROM  # where the DSN came from, as the hint of a failure to connect says

    def connect_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"autocommit": True, "connect_timeout": 10,
                                  "keepalives": 1, "keepalives_idle": 10,
                                  "keepalives_interval": 5, "keepalives_count": 3}
        if "application_name" not in psycopg.conninfo.conninfo_to_dict(self.config.dsn):
            kwargs["application_name"] = f"brooq worker {self.name}"[:63]
        if self.config.transaction_pooler:
            # psycopg prepares a statement run 5 times on the server connection of the
            # moment; PgBouncer in transaction mode (before 1.21's max_prepared_statements)
            # hands the next one to another: "prepared statement _pg3_0 does not exist"
            kwargs["prepare_threshold"] = None
        return kwargs

    def open(self) -> Conn:
        """A connection with the worker's settings, no topics (the settling thread's)."""
        conn = psycopg.connect(self.config.dsn, **self.connect_kwargs())
        if not self.config.transaction_pooler:
            # session state: through a pooler it would stay on a server connection that
            # other clients get next; there the role's statement_timeout bounds statements
            try:
                conn.execute(queries.SET_STATEMENT_TIMEOUT, [str(self.config.statement_timeout_ms)])
            except BaseException:
                conn.close()
                raise
        return conn

    def connect(self) -> None:
        """Open the loop's connection (``conn``); the first of the run also checks the
        schema and declares the topics."""
        try:
            conn = psycopg.connect(self.config.dsn, **self.connect_kwargs())
        except psycopg.Error as exc:
            if not self._connected_once:
                self._not_yet(exc)  # the DSN is wrong (raised), or the server is not up (waited for)
            raise
        try:
            register_loaders(conn)
            if not self.config.transaction_pooler:  # see open
                conn.execute(queries.SET_STATEMENT_TIMEOUT, [str(self.config.statement_timeout_ms)])
            if not self._declared:
                self._declare_topics(conn)
        except psycopg.Error as exc:
            conn.close()
            if not self._connected_once and transient(exc):  # e.g. a read-only standby (25006)
                self._not_yet(exc)
            raise
        except BaseException:
            conn.close()
            raise
        self.conn = conn  # connected, topics declared
        if self._failures:
            log.info(_("worker.reconnected" if self._connected_once else "worker.connected_after_wait",
                       worker=self.name, seconds=time.monotonic() - self._lost_at))
        self._connected_once = True
        self._failures = 0

    def _not_yet(self, exc: psycopg.Error) -> None:
        """The first connection failed: raise ConnectError unless the failure is transient
        and start_timeout has not run out since the first try (the caller then raises
        ``exc``, which the loop waits out as a lost connection: see ``lost``)."""
        now = time.monotonic()
        if self._waiting_since is None:
            self._waiting_since = now
        waited = now - self._waiting_since
        limit = self.config.start_timeout.total_seconds()
        # behind several hosts, the one that refused (what psycopg says first is the
        # last host's failure: maybe only a primary that is down)
        why = next((f for f in host_failures(exc) if not may_pass(f)), None) if not transient(exc) else None
        reason = one_line(why or exc, 300) or type(exc).__name__
        if transient(exc) and waited < limit:
            return
        hint = CONNECT_HINT.format(dsn_from=self.dsn_from)
        if transient(exc) and limit > 0:
            hint = (f"the database was still unreachable after start_timeout "
                    f"{format_duration(self.config.start_timeout)}; {hint}")
        message = f"cannot connect to the database: {reason}"
        raise ConnectError(f"{message} (hint: {hint})", hint=hint, reason=message) from None

    def _declare_topics(self, conn: Conn) -> None:
        schema = check_schema(conn, __version__)  # no schema, an older one, or no right to use it
        log.info(_("worker.connected", worker=self.name, version=__version__, schema=schema))
        existing = set(self._topics_max_execution(conn))
        kept = []
        names: list[str] | None = None  # every topic's, read once a topic is created
        for h in self._handlers.values():
            try:
                declare(conn, h)
            except PermissionDenied:
                kept.append(h.topic)  # the usual split (docs/operations.md: topics are an admin's)
                continue
            except BrooqError as exc:
                raise ConfigError([f"handler {h.topic!r}: {exc}"]) from None
            if h.topic not in existing:  # a new topic: a typo's (emial) when a close name exists
                if names is None:
                    names = [name for (name,) in conn.execute(TOPIC_NAMES).fetchall()]
                if (close := closest(h.topic, names)) is not None:
                    log.warning(_("worker.topic_created_close", worker=self.name, topic=h.topic, close=close))
                else:
                    log.info(_("worker.topic_created", worker=self.name, topic=h.topic))
        if missing := [topic for topic in kept if topic not in existing]:
            raise ConfigError([_("worker.topic_missing", topic=topic) for topic in missing])
        for topic in kept:  # not a warning: the settings are an admin's
            log.info(_("worker.topic_settings_kept", worker=self.name, topic=topic))
        self._check_max_execution(conn)
        self._declared = True

    def _check_max_execution(self, conn: Conn) -> None:
        """Refuse to start when an attempt timeout is longer than its topic's max_execution
        (as the database holds it: declared by us, or by an admin): every such handler in
        one ConfigError."""
        self.max_execution = self._topics_max_execution(conn)
        problems = []
        for h in self._handlers.values():
            limit = self.max_execution.get(h.topic)
            if limit is not None and h.timeout is not None and h.timeout > limit:
                problems.append(f"handler {h.topic!r}: timeout {format_duration(h.timeout)} is longer than "
                                f"the topic's max_execution {format_duration(limit)} (a job's time across "
                                "all its attempts): shorten the timeout, or raise max_execution")
        if problems:
            raise ConfigError(problems)

    def _topics_max_execution(self, conn: Conn) -> dict[str, timedelta | None]:
        """The registered topics that exist, each with its max_execution."""
        with mapped(WORKER, conn):  # a role without brooq_worker may not read topic_stats
            rows = conn.execute(queries.TOPIC_MAX_EXECUTION, [list(self._handlers)]).fetchall()
        return {topic: limit for topic, limit in rows}

    def lost(self, exc: BaseException) -> None:
        """The loop's connection failed (or could not be opened): close it, say so, and
        set when to try again."""
        self._failures += 1
        delay = backoff(self._failures) * random.uniform(0.5, 1.0)
        now = time.monotonic()
        reason = one_line(exc, 300) or type(exc).__name__
        if self._failures == 1:  # said once; then a reminder every REMIND_EVERY
            self._lost_at = now
            self._next_reminder = now + REMIND_EVERY
            if self._connected_once:
                log.warning(_("worker.connection_lost", worker=self.name, reason=reason,
                              max_delay=RECONNECT_MAX))
            else:
                log.warning(_("worker.waiting_for_database", worker=self.name, reason=reason,
                              timeout=format_duration(self.config.start_timeout),
                              max_delay=RECONNECT_MAX))
        elif now >= self._next_reminder:
            self._next_reminder = now + REMIND_EVERY
            log.warning(_("worker.still_disconnected", worker=self.name,
                          seconds=now - self._lost_at, reason=reason))
        else:
            log.debug(_("worker.reconnect_failed", worker=self.name, reason=reason, delay=delay))
        self.close()
        self.next_connect = time.monotonic() + delay

    def close(self) -> None:
        if self.conn is not None:
            with contextlib.suppress(Exception):  # closing a broken connection may fail too
                self.conn.close()
            self.conn = None


def declare(conn: Conn, h: TopicHandler) -> None:
    """Declare a registered handler's topic with its settings (brooq.declare_topic)."""
    declare_topic_settings(conn, h.topic, h.settings)
