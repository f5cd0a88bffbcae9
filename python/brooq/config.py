"""Worker configuration: arguments, or BROOQ_* environment variables, validated at once.

Every setting can come from an argument or from the environment; an argument
wins. Durations need a unit ("500ms", "30s", "2m", "1h", "1d", or sums like
"1m30s"): a bare number is an error, because "30" could mean seconds or
milliseconds. Validation lists every problem in one :class:`ConfigError`.

| setting          | variable               | default                      |
|------------------|------------------------|------------------------------|
| dsn              | BROOQ_DSN              | (required)                   |
| concurrency      | BROOQ_CONCURRENCY      | 10                           |
| prefetch         | BROOQ_PREFETCH         | concurrency                  |
| lease            | BROOQ_LEASE            | 30s                          |
| poll_interval    | BROOQ_POLL_INTERVAL    | 1s                           |
| reap_interval    | BROOQ_REAP_INTERVAL    | lease / 2                    |
| shutdown_grace   | BROOQ_SHUTDOWN_GRACE   | 30s                          |
| hung_grace       | BROOQ_HUNG_GRACE       | 10s                          |
| stats_interval   | BROOQ_STATS_INTERVAL   | 15s                          |
| metrics_address  | BROOQ_METRICS_ADDRESS  | none (no HTTP server)        |
| name             | BROOQ_WORKER_NAME      | hostname:pid:random          |
"""

from __future__ import annotations

import ipaddress
import os
import re
import secrets
import socket
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from datetime import timedelta
from typing import Any

import psycopg

from brooq.errors import ConfigError

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
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"


@dataclass(frozen=True)
class WorkerConfig:
    """The settings of a brooq.Worker (see the module docstring for variables and defaults)."""

    dsn: str = ""
    concurrency: int = 10
    prefetch: int | None = None  # None: as many as concurrency; 0: claim only for free slots
    lease: timedelta = timedelta(seconds=30)
    poll_interval: timedelta = timedelta(seconds=1)
    reap_interval: timedelta | None = None  # None: lease / 2
    shutdown_grace: timedelta = timedelta(seconds=30)
    hung_grace: timedelta = timedelta(seconds=10)
    stats_interval: timedelta = timedelta(seconds=15)
    metrics_address: str | None = None
    name: str | None = None  # None: hostname:pid:random

    @property
    def effective_reap_interval(self) -> timedelta:
        return self.reap_interval if self.reap_interval is not None else self.lease / 2

    @property
    def effective_prefetch(self) -> int:
        return self.prefetch if self.prefetch is not None else self.concurrency

    @property
    def heartbeat_interval(self) -> timedelta:
        return self.lease / 3

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> WorkerConfig:
        """Settings from BROOQ_* variables, overridden by the non-None keyword arguments.

        Raises ConfigError listing every problem (unparsable variables included).
        """
        env = os.environ if environ is None else environ
        problems: list[str] = []
        values: dict[str, Any] = {}
        for f in fields(cls):
            names = _VARIABLES[f.name]
            raw = next((env[n] for n in names if env.get(n, "") != ""), None)
            if raw is None:
                continue
            try:
                values[f.name] = _PARSERS.get(f.name, str)(raw)
            except ValueError as exc:
                problems.append(f"{names[0]}={raw!r}: {exc}")
        values.update({k: v for k, v in overrides.items() if v is not None})
        unknown = set(values) - {f.name for f in fields(cls)}
        if unknown:
            raise TypeError(f"unknown worker settings: {', '.join(sorted(unknown))}")
        config = cls(**values)
        config.validate(problems)
        return config

    def with_defaults(self) -> WorkerConfig:
        """This configuration with the worker name filled in."""
        return self if self.name else replace(self, name=default_worker_name())

    def validate(self, problems: list[str] | None = None) -> None:
        """Raise ConfigError listing every problem, if there is any."""
        problems = list(problems or [])
        if not self.dsn:
            problems.append("dsn: missing; pass dsn= or set BROOQ_DSN")
        else:
            try:
                psycopg.conninfo.conninfo_to_dict(self.dsn)
            except psycopg.ProgrammingError as exc:
                problems.append(f"dsn: not a valid connection string: {' '.join(str(exc).split())}")
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
        if self.hung_grace <= timedelta(0):
            problems.append(f"hung_grace: {format_duration(self.hung_grace)} must be positive")
        if self.stats_interval < timedelta(seconds=0.1):
            problems.append(f"stats_interval: {format_duration(self.stats_interval)} is below 100ms")
        if self.metrics_address is not None:
            try:
                parse_address(self.metrics_address)
            except ValueError as exc:
                problems.append(f"metrics_address: {exc}")
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


def _parse_int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ValueError("not an integer") from None


_VARIABLES: dict[str, tuple[str, ...]] = {
    "dsn": ("BROOQ_DSN",),
    "concurrency": ("BROOQ_CONCURRENCY",),
    "prefetch": ("BROOQ_PREFETCH",),
    "lease": ("BROOQ_LEASE",),
    "poll_interval": ("BROOQ_POLL_INTERVAL",),
    "reap_interval": ("BROOQ_REAP_INTERVAL",),
    "shutdown_grace": ("BROOQ_SHUTDOWN_GRACE",),
    "hung_grace": ("BROOQ_HUNG_GRACE",),
    "stats_interval": ("BROOQ_STATS_INTERVAL",),
    "metrics_address": ("BROOQ_METRICS_ADDRESS",),
    "name": ("BROOQ_WORKER_NAME", "BROOQ_NAME"),
}

_PARSERS: dict[str, Any] = {
    "concurrency": _parse_int,
    "prefetch": _parse_int,
    "lease": parse_duration,
    "poll_interval": parse_duration,
    "reap_interval": parse_duration,
    "shutdown_grace": parse_duration,
    "hung_grace": parse_duration,
    "stats_interval": parse_duration,
}
