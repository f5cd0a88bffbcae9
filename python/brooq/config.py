"""Worker configuration: code, the command line, or BROOQ_* environment variables,
validated at once.

Each setting is declared once, as a field of WorkerConfig made by
brooq.declared.setting, as a topic's settings are: its type, default, meaning and
bounds. Its environment variable (BROOQ_<NAME>, ``Setting.environment``), its option
of `brooq worker` (--<name>, see brooq.tools.cli), how either is parsed
(``Setting.parse``), the docs' table and the refusal of a value out of bounds are
derived from that field. Precedence: the command line, then a value given in code,
then the environment, then the default. Durations need a unit ("500ms", "30s", "2m",
"1h", "1d", or sums like "1m30s"): a bare number is an error, because "30" could mean
seconds or milliseconds. Validation lists every problem in one :class:`ConfigError`.
"""

from __future__ import annotations

import contextlib
import contextvars
import ipaddress
import os
import socket
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any

import psycopg

from brooq import nometrics
from brooq.declared import Setting, format_duration, parse_duration, setting, settings_of
from brooq.errors import ConfigError
from brooq.redact import one_line, remember

__all__ = ["NAMES", "SETTINGS", "WorkerConfig", "command_line", "default_worker_name",
           "format_duration", "is_loopback", "parse_address", "parse_duration"]


def default_worker_name() -> str:
    # os.urandom, not secrets.token_hex: the same bytes, without loading OpenSSL's
    # libcrypto through hashlib (0.7 MiB of a worker's memory)
    return f"{socket.gethostname()}:{os.getpid()}:{os.urandom(3).hex()}"


def _dsn(value: str) -> str | None:
    if not value:
        return "missing; pass dsn= or set BROOQ_DSN"
    return _listen_dsn(value)


def _listen_dsn(value: str | None) -> str | None:
    if not value:
        return None
    try:
        psycopg.conninfo.conninfo_to_dict(value)
    except psycopg.ProgrammingError as exc:
        return f"not a valid connection string: {one_line(exc)}"
    return None


def _metrics_address(value: str) -> str | None:
    try:
        parse_address(value)
    except ValueError as exc:
        return str(exc)
    if not nometrics.available():
        return f"set, but prometheus-client is not installed; {nometrics.hint()}; or unset metrics_address"
    return None


def _name(value: str) -> str | None:
    return None if 1 <= len(value) <= 200 else f"{len(value)} characters; use 1 to 200"


@dataclass(frozen=True)
class WorkerConfig:
    """The settings of a brooq.Worker: the one place where a setting is declared."""

    dsn: str = setting("", "the database: a libpq connection string or URI", shown="(required)",
                       check=_dsn)
    concurrency: int = setting(10, "handlers running at once", low=1, high=10000)
    prefetch: int | None = setting(
        None, "jobs claimed ahead, waiting leased for a free handler thread (0: none)",
        shown="concurrency", low=0, high=10000)
    lease: timedelta = setting(
        timedelta(seconds=30), "lease length; heartbeats every lease/3",
        low=timedelta(seconds=1), high=timedelta(days=1),
        below="is too short to keep with heartbeats every lease/3 (one database round trip each); "
              "use at least 1s", above="is longer than a day")
    poll_interval: timedelta = setting(
        timedelta(seconds=1), "claim period without NOTIFY",
        low=timedelta(milliseconds=10), high=timedelta(hours=1),
        below="is not between 10ms and 1h", above="is not between 10ms and 1h")
    reap_interval: timedelta | None = setting(None, "period of brooq.reap calls", shown="lease / 2",
                                              low=timedelta(milliseconds=100))
    shutdown_grace: timedelta = setting(timedelta(seconds=30),
                                        "time to finish in-flight jobs on stop", low=timedelta(0))
    start_timeout: timedelta = setting(timedelta(minutes=5),
                                       "how long a worker that has never connected waits for a database "
                                       "that is unreachable or starting up (0: stop at once)",
                                       low=timedelta(0))
    hung_grace: timedelta = setting(timedelta(seconds=10),
                                    "how long a handler told to stop may run before it is reported hung",
                                    low=timedelta(microseconds=1), below="must be positive")
    stats_interval: timedelta = setting(timedelta(seconds=15),
                                        "period of the brooq.topic_stats gauges (with a metrics server)",
                                        low=timedelta(milliseconds=100))
    metrics_address: str | None = setting(None, "serve /metrics and /healthz on HOST:PORT",
                                          shown="none (no HTTP server)", check=_metrics_address)
    metrics_public: bool = setting(False, "allow a metrics_address that is not loopback "
                                          "(the endpoints have no authentication)")
    name: str | None = setting(None, "the worker's name (locked_by)", shown="hostname:pid:random",
                               variables=("BROOQ_WORKER_NAME", "BROOQ_NAME"), check=_name)
    transaction_pooler: bool = setting(
        False, "the dsn goes through a pooler in transaction mode (PgBouncer): no session state "
               "and no prepared statements on it, and LISTEN needs listen_dsn or listen=false")
    listen: bool = setting(True, "LISTEN for enqueues of our topics (false: poll every "
                                 "poll_interval only)")
    listen_dsn: str | None = setting(None, "the database for LISTEN: a direct connection, not "
                                           "through a transaction pooler", shown="dsn", check=_listen_dsn)

    @property
    def effective_reap_interval(self) -> timedelta:
        return self.reap_interval if self.reap_interval is not None else self.lease / 2

    @property
    def effective_prefetch(self) -> int:
        return self.prefetch if self.prefetch is not None else self.concurrency

    @property
    def effective_listen_dsn(self) -> str | None:
        """The DSN the listener connects to; None: no listener, the worker polls."""
        if not self.listen:
            return None
        return self.listen_dsn or self.dsn

    @property
    def statement_timeout_ms(self) -> int:
        """The statement_timeout of the worker's connections, derived from the lease here
        only: half the lease, at least 1 s (the loop's watchdog and health allow that
        long for a statement)."""
        return max(1000, int(self.lease.total_seconds() * 500))

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> WorkerConfig:
        """Settings from BROOQ_* variables, overridden by the non-None keyword arguments
        (values given in code), overridden by the command line (see command_line).

        Raises ConfigError listing every problem (unparsable variables included).
        """
        env = os.environ if environ is None else environ
        problems: list[str] = []
        values: dict[str, Any] = {}
        for s in SETTINGS:
            raw = next((env[n] for n in s.environment if env.get(n, "") != ""), None)
            if raw is None:
                continue
            try:
                values[s.name] = s.parse(raw)
            except ValueError as exc:
                problems.append(f"{s.variable}={raw!r}: {exc}")
        values.update({k: v for k, v in overrides.items() if v is not None})
        values.update(_command_line.get() or {})
        unknown = set(values) - set(NAMES)
        if unknown:
            raise TypeError(f"unknown worker settings: {', '.join(sorted(unknown))}")
        config = cls(**values)
        config.validate(problems)
        return config

    def with_command_line(self) -> WorkerConfig:
        """This configuration with the settings of the command line (see command_line) over it."""
        given = _command_line.get()
        return replace(self, **given) if given else self

    def with_defaults(self) -> WorkerConfig:
        """This configuration with the worker name filled in."""
        return self if self.name else replace(self, name=default_worker_name())

    def validate(self, problems: list[str] | None = None) -> None:
        """Raise ConfigError listing every problem, if there is any: each setting out of
        its declared bounds or refused by its check, then the settings that do not go
        together."""
        problems = list(problems or [])
        remember(self.dsn)  # no message of this process shows their passwords (brooq.redact)
        remember(self.listen_dsn)
        refused: set[str] = set()
        for s in SETTINGS:
            if (problem := s.refusal(getattr(self, s.name))) is not None:
                problems.append(problem)
                refused.add(s.name)
        if (self.reap_interval is not None and "reap_interval" not in refused
                and isinstance(self.lease, timedelta) and self.lease >= timedelta(seconds=1)
                and self.reap_interval > 10 * self.lease):
            problems.append(f"reap_interval: {format_duration(self.reap_interval)} is more than 10 leases: "
                            "jobs of crashed workers would wait that long")
        if (self.metrics_address is not None and "metrics_address" not in refused
                and not self.metrics_public and not is_loopback(host := parse_address(self.metrics_address)[0])):
            problems.append(f"metrics_address: {host} is not a loopback address, and /metrics "
                            "and /healthz have no authentication; set metrics_public "
                            "(BROOQ_METRICS_PUBLIC=true) to serve them there anyway")
        if self.transaction_pooler and self.listen and not self.listen_dsn:
            problems.append("transaction_pooler: LISTEN through a pooler in transaction mode hears no "
                            "notification; set listen_dsn to a direct connection "
                            "(BROOQ_LISTEN_DSN), or listen=false (BROOQ_LISTEN=false) to poll only")
        if problems:
            raise ConfigError(problems)


def parse_address(text: str) -> tuple[str, int]:
    """'127.0.0.1:9464' or '[::1]:9464' or 'localhost:0' -> (host, port)."""
    host, sep, port_text = text.rpartition(":")
    if not sep or not host or not port_text.isdigit():
        raise ValueError(f"{text!r} is not HOST:PORT, e.g. 127.0.0.1:9464")
    port = int(port_text)
    if port > 65535:
        raise ValueError(f"port {port} is out of range")
    host = host.strip("[]")
    if host != "localhost":
        try:
            ipaddress.ip_address(host)
        except ValueError:
            raise ValueError(f"host {host!r} is not an IP address or localhost") from None
    return host, port


def is_loopback(host: str) -> bool:
    """'localhost', 127.0.0.0/8 and ::1."""
    return host == "localhost" or ipaddress.ip_address(host).is_loopback


SETTINGS: tuple[Setting, ...] = settings_of(WorkerConfig)
NAMES: tuple[str, ...] = tuple(s.name for s in SETTINGS)

# Settings given on a command line: while a tool imports the user's module (which
# makes its brooq.Worker), they win over values given in code. A context variable,
# not the environment: nothing leaks into the process or its children.
_command_line: contextvars.ContextVar[Mapping[str, Any] | None] = contextvars.ContextVar(
    "brooq_command_line", default=None)


@contextlib.contextmanager
def command_line(settings: Mapping[str, Any]) -> Iterator[None]:
    """Within this block, every WorkerConfig made takes these settings (None: not given)
    over the values given in code and in the environment."""
    given = {k: v for k, v in settings.items() if v is not None}
    unknown = set(given) - set(NAMES)
    if unknown:
        raise TypeError(f"unknown worker settings: {', '.join(sorted(unknown))}")
    token = _command_line.set(given)
    try:
        yield
    finally:
        _command_line.reset(token)
