"""Passwords out of every message: a DSN or a libpq error may carry one.

libpq echoes a connection string it cannot parse whole ("missing "=" after
"postgresql://u:S3cretPw@[::1/db" ..."), or just the value it refused
(`invalid percent-encoded token: "pw%zzX"`, `unexpected spaces found in "p w"`),
and a DSN given by mistake may reach a log line. Every message brooq builds from an
exception or a DSN goes through ``one_line``, which hides:

- the password of every DSN this process was given (``remember``: the worker's
  configuration and the CLI's --dsn call it), in each spelling a message may quote:
  as written, percent-decoded, as libpq splits a URI whose password holds an
  unencoded ``@`` ``:`` or ``/``, and each piece of it between such characters;
- any password of a URI or a key=value string in the text (by its form).

Spellings shorter than MIN_SECRET are left: hiding them would garble the message
(a password "pa" would hide "password") and hide little.
"""

from __future__ import annotations

import re
import threading
from urllib.parse import unquote

import psycopg
from psycopg.conninfo import conninfo_to_dict

MIN_SECRET = 4

_URI_PASSWORD = re.compile(r"(\b[a-z][a-z0-9+.-]*://[^:/@\s]*:)[^@\s]*(@)", re.IGNORECASE)
_KEYWORD_PASSWORD = re.compile(r"(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", re.IGNORECASE)
_URI_SCHEME = re.compile(r"postgres(?:ql)?://", re.IGNORECASE)
_QUERY_PASSWORD = re.compile(r"[?&]password=([^&]*)", re.IGNORECASE)
# where libpq's URI parser ends a part: what a password holding one is split at
_SEPARATORS = re.compile(r"[@:/?#&=\[\]\s'\"]+")

_lock = threading.Lock()
_known: list[str] = []  # the spellings of every remembered password, longest first


def _spellings(value: str) -> set[str]:
    """A password value as written, percent-decoded, and its pieces."""
    whole = {value, unquote(value)}
    pieces = {piece for v in whole for piece in _SEPARATORS.split(v)}
    return {s for s in whole | pieces if len(s) >= MIN_SECRET}


def _keyword_value(dsn: str, start: int) -> list[str]:
    """The value of a key=value password at ``start``: as written and unescaped."""
    if dsn.startswith("'", start):
        end = start + 1
        while end < len(dsn) and dsn[end] != "'":
            end += 2 if dsn[end] == "\\" else 1
        raw = dsn[start + 1:end]
    else:
        match = re.compile(r"\S*").match(dsn, start)
        raw = match.group() if match else ""
    return [raw, re.sub(r"\\(.)", r"\1", raw)]


def secrets(dsn: str) -> set[str]:
    """Every spelling of the password of ``dsn`` a message may quote (MIN_SECRET long)."""
    values: list[str] = []
    scheme = _URI_SCHEME.match(dsn)
    if scheme:
        rest = dsn[scheme.end():]
        # libpq: the user info ends at the first "@" (looked for before any "/"), the
        # password at its first ":"; a user may mean the last "@" of the string
        first = re.match(r"[^@/]*@", rest)
        for userinfo in (first.group()[:-1] if first else "", rest[:max(rest.rfind("@"), 0)]):
            if ":" in userinfo:
                values.append(userinfo.split(":", 1)[1])
        values += _QUERY_PASSWORD.findall(rest)
    else:
        for match in re.finditer(r"\bpassword\s*=\s*", dsn, re.IGNORECASE):
            values += _keyword_value(dsn, match.end())
    found: set[str] = set()
    for value in values:
        found |= _spellings(value)
    return found


def remember(dsn: str | None) -> None:
    """From now on, hide the password of ``dsn`` in every message of this process."""
    if not dsn:
        return
    new = secrets(dsn)
    with _lock:
        if new - set(_known):
            _known[:] = sorted(set(_known) | new, key=len, reverse=True)


def redact(text: str, dsn: str | None = None) -> str:
    """The text with the passwords of ``dsn`` and of every remembered DSN, and every
    password of a URI or a key=value string in it, replaced by ***."""
    known = _known if dsn is None else sorted({*_known, *secrets(dsn)}, key=len, reverse=True)
    for secret in known:
        if secret in text:
            text = text.replace(secret, "***")
    return _KEYWORD_PASSWORD.sub(r"\1***", _URI_PASSWORD.sub(r"\1***\2", text))


def shown_dsn(dsn: str | None) -> str:
    """Which database a DSN names, for a log line: postgresql://user@host:port/dbname,
    never its password nor any other parameter (what the DSN leaves out, libpq takes
    from PG* variables or its defaults)."""
    try:
        parts = conninfo_to_dict(dsn or "")
    except psycopg.ProgrammingError:
        return one_line(dsn)
    user, host, port, dbname = (parts.get(k) for k in ("user", "host", "port", "dbname"))
    if not (user or host or port or dbname):
        return "libpq defaults (PG* variables)"
    return (f"postgresql://{f'{user}@' if user else ''}{host or ''}{f':{port}' if port else ''}"
            f"/{dbname or ''}")


def one_line(value: object, limit: int | None = None, dsn: str | None = None) -> str:
    """str(value) on one line, passwords redacted (see redact), cut to ``limit`` characters."""
    text = " ".join(redact(str(value), dsn).split())
    return text if limit is None else text[:limit]
