"""Worker configuration: code, the command line, or BROOQ_* environment variables,
validated at once.

Each setting is declared once, as a field of WorkerConfig: its type, default and
meaning. Its environment variable (BROOQ_<NAME>, see ``variables``) and its option
of `brooq worker` (--<name>, see brooq.tools.cli) are derived from that field.
Precedence: the command line, then a value given in code, then the environment,
then the default. Durations need a unit ("500ms", "30s", "2m", "1h", "1d", or sums
like "1m30s"): a bare number is an error, because "30" could mean seconds or
milliseconds. Validation lists every problem in one :class:`ConfigError`.
"""

from __future__ import annotations

import contextlib
import contextvars
import ipaddress
import os
import re
import socket
from collections.abc import Callable, Iterator, Mapping
from dataclasses import Field, dataclass, field, fields, replace
from datetime import timedelta
from typing import Any

import psycopg

from brooq import nometrics
from brooq.errors import ConfigError
from brooq.redact import one_line, remember

_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")


def parse_duration(text: str) -> timedelta:
    """'500ms', '30s', '2m', '1h', '1d', '1m30s' -> timedelta; ValueError otherwise."""
    s = text.strip().lower().replace(" ", "")
    if not s:
        raise ValueError("empty duration")
    pos, total = 0, 0.0
    while pos < len(s):
        m = _PART.match(s, pos)
        if m is None:
            break
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if pos != len(s) or pos == 0:
        if re.fullmatch(r"\d+(\.\d+)?", s):
            raise ValueError(f"duration {text!r} needs a unit, e.g. {s}s or {s}ms")
        raise ValueError(f"invalid duration {text!r}: use a number and a unit (ms, s, m, h, d), e.g. 30s")
    return timedelta(seconds=total)


def format_duration(value: timedelta) -> str:
    """A duration as the shortest text parse_duration reads back ('30s', '500ms')."""
    seconds = value.total_seconds()
    if seconds and seconds < 1:
        return f"{seconds * 1000:g}ms"
    return f"{seconds:g}s"


def default_worker_name() -> str:
    # os.urandom, not secrets.token_hex: the same bytes, without loading OpenSSL's
    # libcrypto through hashlib (0.7 MiB of a worker's memory)
    return f"{socket.gethostname()}:{os.getpid()}:{os.urandom(3).hex()}"


def setting(default: Any, doc: str, *, shown: str | None = None,
            variables: tuple[str, ...] | None = None) -> Any:
    """A field of WorkerConfig: its default, what it means (the option's help and the
    docs), the default as shown when it is derived (``shown``), and its environment
    variables when they are not BROOQ_<NAME>."""
    return field(default=default, metadata={"doc": doc, "shown": shown, "variables": variables})


@dataclass(frozen=True)
class WorkerConfig:
    """The settings of a brooq.Worker: the one place where a setting is declared."""

    dsn: str = setting("", "the database: a libpq connection string or URI", shown="(required)")
    concurrency: int = setting(10, "handlers running at once")
    prefetch: int | None = setting(
        None, "jobs claimed ahead, waiting leased for a free handler thread (0: none)",
        shown="concurrency")
    lease: timedelta = setting(timedelta(seconds=30), "lease length; heartbeats every lease/3")
    poll_interval: timedelta = setting(timedelta(seconds=1), "claim period without NOTIFY")
    reap_interval: timedelta | None = setting(None, "period of brooq.reap calls", shown="lease / 2")
    shutdown_grace: timedelta = setting(timedelta(seconds=30),
                                        "time to finish in-flight jobs on stop")
    start_timeout: timedelta = setting(timedelta(minutes=5),
                                       "how long a worker that has never connected waits for a database "
                                       "that is unreachable or starting up (0: stop at once)")
    hung_grace: timedelta = setting(timedelta(seconds=10),
                                    "how long a handler told to stop may run before it is reported hung")
    stats_interval: timedelta = setting(timedelta(seconds=15),
                                        "period of the brooq.topic_stats gauges (with a metrics server)")
    metrics_address: str | None = setting(None, "serve /metrics and /healthz on HOST:PORT",
                                          shown="none (no HTTP server)")
    metrics_public: bool = setting(False, "allow a metrics_address that is not loopback "
                                          "(the endpoints have no authentication)")
    name: str | None = setting(None, "the worker's name (locked_by)", shown="hostname:pid:random",
                               variables=("BROOQ_WORKER_NAME", "BROOQ_NAME"))
    transaction_pooler: bool = setting(
        False, "the dsn goes through a pooler in transaction mode (PgBouncer): no session state "
               "and no prepared statements on it, and LISTEN needs listen_dsn or listen=false")
    listen: bool = setting(True, "LISTEN for enqueues of our topics (false: poll every "
                                 "poll_interval only)")
    listen_dsn: str | None = setting(None, "the database for LISTEN: a direct connection, not "
                                           "through a transaction pooler", shown="dsn")

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

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> WorkerConfig:
        """Settings from BROOQ_* variables, overridden by the non-None keyword arguments
        (values given in code), overridden by the command line (see command_line).

        Raises ConfigError listing every problem (unparsable variables included).
        """
        env = os.environ if environ is None else environ
        problems: list[str] = []
        values: dict[str, Any] = {}
        for f in fields(cls):
            names = variables(f)
            raw = next((env[n] for n in names if env.get(n, "") != ""), None)
            if raw is None:
                continue
            try:
                values[f.name] = parser(f)(raw)
            except ValueError as exc:
                problems.append(f"{names[0]}={raw!r}: {exc}")
        values.update({k: v for k, v in overrides.items() if v is not None})
        values.update(_command_line.get() or {})
        unknown = set(values) - {f.name for f in fields(cls)}
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
        """Raise ConfigError listing every problem, if there is any."""
        problems = list(problems or [])
        remember(self.dsn)  # no message of this process shows their passwords (brooq.redact)
        remember(self.listen_dsn)
        if not self.dsn:
            problems.append("dsn: missing; pass dsn= or set BROOQ_DSN")
        else:
            try:
                psycopg.conninfo.conninfo_to_dict(self.dsn)
            except psycopg.ProgrammingError as exc:
                problems.append(f"dsn: not a valid connection string: {one_line(exc)}")
        if not isinstance(self.concurrency, int) or not 1 <= self.concurrency <= 10000:
            problems.append(f"concurrency: {self.concurrency!r} is not an integer from 1 to 10000")
        if self.prefetch is not None and (not isinstance(self.prefetch, int)
                                          or not 0 <= self.prefetch <= 10000):
            problems.append(f"prefetch: {self.prefetch!r} is not an integer from 0 to 10000")
        lease = self.lease.total_seconds()
        if lease < 1:
            problems.append(f"lease: {format_duration(self.lease)} is too short to keep with heartbeats "
                            "every lease/3 (one database round trip each); use at least 1s")
        elif lease > 86400:
            problems.append(f"lease: {format_duration(self.lease)} is longer than a day")
        poll = self.poll_interval.total_seconds()
        if not 0.01 <= poll <= 3600:
            problems.append(f"poll_interval: {format_duration(self.poll_interval)} is not between 10ms and 1h")
        if self.reap_interval is not None:
            reap = self.reap_interval.total_seconds()
            if reap < 0.1:
                problems.append(f"reap_interval: {format_duration(self.reap_interval)} is below 100ms")
            elif lease >= 1 and reap > 10 * lease:
                problems.append(f"reap_interval: {format_duration(self.reap_interval)} is more than 10 leases: "
                                "jobs of crashed workers would wait that long")
        if self.shutdown_grace < timedelta(0):
            problems.append(f"shutdown_grace: {format_duration(self.shutdown_grace)} is negative")
        if self.start_timeout < timedelta(0):
            problems.append(f"start_timeout: {format_duration(self.start_timeout)} is negative")
        if self.hung_grace <= timedelta(0):
            problems.append(f"hung_grace: {format_duration(self.hung_grace)} must be positive")
        if self.stats_interval < timedelta(seconds=0.1):
            problems.append(f"stats_interval: {format_duration(self.stats_interval)} is below 100ms")
        if self.metrics_address is not None:
            try:
                host, _ = parse_address(self.metrics_address)
            except ValueError as exc:
                problems.append(f"metrics_address: {exc}")
            else:
                if not nometrics.available():
                    problems.append(f"metrics_address: set, but prometheus-client is not installed; "
                                    f"{nometrics.hint()}; or unset metrics_address")
                elif not self.metrics_public and not is_loopback(host):
                    problems.append(f"metrics_address: {host} is not a loopback address, and /metrics "
                                    "and /healthz have no authentication; set metrics_public "
                                    "(BROOQ_METRICS_PUBLIC=true) to serve them there anyway")
        if self.listen_dsn:
            try:
                psycopg.conninfo.conninfo_to_dict(self.listen_dsn)
            except psycopg.ProgrammingError as exc:
                problems.append(f"listen_dsn: not a valid connection string: {one_line(exc)}")
        if self.transaction_pooler and self.listen and not self.listen_dsn:
            problems.append("transaction_pooler: LISTEN through a pooler in transaction mode hears no "
                            "notification; set listen_dsn to a direct connection "
                            "(BROOQ_LISTEN_DSN), or listen=false (BROOQ_LISTEN=false) to poll only")
        if self.name is not None and not 1 <= len(self.name) <= 200:
            problems.append(f"name: {len(self.name)} characters; use 1 to 200")
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


def _parse_bool(text: str) -> bool:
    value = text.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise ValueError("not a boolean (true or false)")


def _parse_int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ValueError("not an integer") from None


def variables(f: Field[Any]) -> tuple[str, ...]:
    """The environment variables of a setting, the first one its name in messages."""
    names: tuple[str, ...] | None = f.metadata.get("variables")
    return names or (f"BROOQ_{f.name.upper()}",)


def parser(f: Field[Any]) -> Callable[[str], Any]:
    """How a setting is read from text (a variable, an option): by its type."""
    kind = str(f.type)
    if "timedelta" in kind:
        return parse_duration
    if kind.startswith("int"):
        return _parse_int
    if kind.startswith("bool"):
        return _parse_bool
    return str


def shown_default(f: Field[Any]) -> str:
    """A setting's default as the docs and --help show it."""
    shown: str | None = f.metadata.get("shown")
    if shown is not None:
        return shown
    if isinstance(f.default, timedelta):
        return format_duration(f.default)
    return str(f.default)


SETTINGS: tuple[Field[Any], ...] = fields(WorkerConfig)

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
    unknown = set(given) - {f.name for f in SETTINGS}
    if unknown:
        raise TypeError(f"unknown worker settings: {', '.join(sorted(unknown))}")
    token = _command_line.set(given)
    try:
        yield
    finally:
        _command_line.reset(token)
