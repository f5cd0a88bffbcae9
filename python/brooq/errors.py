"""brooq's exceptions, and the mapping from PostgreSQL SQLSTATEs to them.

The SQL functions raise standard SQLSTATEs (never P0001); the Python helpers turn
them into these classes, keeping the psycopg error as ``__cause__`` and its
SQLSTATE as ``.sqlstate``. The mapping is by SQLSTATE only, never by message text.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg

# Errors retrying cannot help (an unknown topic, missing rights): a worker stops on them.
FATAL_SQLSTATES = frozenset({"42704", "42501"})


# The statement failed for a moment, whatever its values: 25006 read_only_sql_transaction
# (a standby, or a primary made read-only for a switchover: default_transaction_read_only),
# 40001 serialization_failure, 40P01 deadlock_detected, 55P03 lock_not_available, 57014
# query_canceled (the statement timeout, pg_cancel_backend). A write is retried on a new
# connection (target_session_attrs=read-write finds the primary), never taken for a value
# the database refused.
TRANSIENT_SQLSTATES = frozenset({"25006", "40001", "40P01", "55P03", "57014"})


def refused(exc: psycopg.Error) -> bool:
    """Whether the database refused a statement (its connection lives on), rather than
    the connection or the server going away or failing for a moment: no SQLSTATE (a
    client-side failure), class 08 (connection), 57P (shutdown), 53 (out of resources)
    or TRANSIENT_SQLSTATES (read-only, a deadlock, a canceled statement...). psycopg's
    OperationalError covers both kinds: 54000 program_limit_exceeded is one too."""
    state = exc.sqlstate
    return (state is not None and not state.startswith(("08", "57P", "53"))
            and state not in TRANSIENT_SQLSTATES)


class BrooqError(Exception):
    """Base class of every brooq error."""

    def __init__(self, message: str, *, sqlstate: str | None = None, hint: str | None = None,
                 reason: str | None = None) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate
        self.hint = hint
        self.reason = reason or message  # the message without its hint


class UnknownTopic(BrooqError):
    """42704 undefined_object: the topic was never declared."""


class InvalidArgument(BrooqError):
    """22023 invalid_parameter_value or 22004 null_value_not_allowed."""


class PayloadTooLarge(BrooqError):
    """54000 program_limit_exceeded: the payload exceeds the topic's max_payload_bytes."""


class PermissionDenied(BrooqError):
    """42501 insufficient_privilege: the role lacks the brooq role the call needs."""


class PgCronMissing(BrooqError):
    """55000 object_not_in_prerequisite_state: pg_cron is not installed."""


class KeyBusy(BrooqError):
    """55P03 lock_not_available: another transaction holds an uncommitted enqueue of the
    same (topic, idempotency key), longer than the setting brooq.key_wait (default 5s)."""


class TopicInUse(BrooqError):
    """55006 object_in_use: drop_topic of a topic that still has jobs or schedules,
    without force."""


class UndecodableJob(BrooqError):
    """get_job or wait read a job whose payload, result or progress Python's json module
    cannot decode (nested deeper than the recursion limit, an integer longer than
    sys.get_int_max_str_digits()); ``.job_id`` names it. Its state is read as text with
    ``select state, last_error from brooq.jobs where id = ...``."""

    def __init__(self, message: str, *, job_id: int, hint: str | None = None,
                 reason: str | None = None) -> None:
        super().__init__(message, hint=hint, reason=reason)
        self.job_id = job_id


class ConnectError(BrooqError):
    """A worker could not connect at start: a wrong password, database name or user, a
    DSN libpq refuses (at once), or a server still unreachable or starting up after
    start_timeout. Once it has connected, a lost connection is retried, never raised."""


class RunAtImport(BrooqError):
    """`brooq worker MODULE:OBJECT` imported a module that runs its worker as it is
    imported: the command runs the worker itself."""


class ConfigError(BrooqError):
    """A worker configuration with problems; ``.problems`` lists every one of them."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"invalid worker configuration ({len(self.problems)} problems):\n{lines}")


BY_SQLSTATE: dict[str, type[BrooqError]] = {
    "42704": UnknownTopic,
    "22023": InvalidArgument,
    "22004": InvalidArgument,
    "23503": InvalidArgument,  # a workflow's parent that does not exist
    "54000": PayloadTooLarge,
    "42501": PermissionDenied,
    "55000": PgCronMissing,
    "55P03": KeyBusy,
    "55006": TopicInUse,
}


# The brooq roles (docs/security.md): who may call what. A caller that knows which
# function it called says which role grants it, so that a 42501 names the fix.
PRODUCER, WORKER, ADMIN = "brooq_producer", "brooq_worker", "brooq_admin"


def who(conn: psycopg.Connection[Any] | psycopg.AsyncConnection[Any]) -> str:
    """The login role of a connection, as the server reported it (no query)."""
    return conn.info.parameter_status("session_authorization") or conn.info.user or "<your role>"


def translate(exc: psycopg.Error, needs: str | None = None, role: str | None = None) -> BrooqError | None:
    """The brooq error for a psycopg error, or None when its SQLSTATE is not brooq's.

    ``needs``: the brooq role that grants what the failed statement called; a
    42501 then says `grant <needs> to <role>`."""
    cls = BY_SQLSTATE.get(exc.sqlstate or "")
    if cls is None:
        return None
    diag = exc.diag
    message = diag.message_primary or str(exc).strip()
    hint = diag.message_hint
    if cls is PermissionDenied and needs is not None:
        fix = f"grant {needs} to {role or '<your role>'}"
        message = f"{message}: {fix}"
        hint = hint or f"as an admin: {fix}; the roles are in docs/security.md"
    reason = message
    if hint:
        message = f"{message} (hint: {hint})"
    return cls(message, sqlstate=exc.sqlstate, hint=hint, reason=reason)


@contextmanager
def mapped(needs: str | None = None,
           conn: psycopg.Connection[Any] | psycopg.AsyncConnection[Any] | None = None) -> Iterator[None]:
    """Re-raise psycopg errors with a brooq SQLSTATE as brooq errors (cause kept);
    a permission error names ``needs``, the role that grants the call, and the
    login role of ``conn``."""
    try:
        yield
    except psycopg.Error as exc:
        error = translate(exc, needs, None if conn is None else who(conn))
        if error is None:
            raise
        raise error from exc
