"""Passwords out of every message: a DSN or a libpq error may carry one.

libpq echoes a connection string it cannot parse whole ("missing "=" after
"postgresql://u:S3cretPw@[::1/db" ..."), and a DSN given by mistake may reach a
log line. Every message brooq builds from an exception or a DSN goes through
``one_line``.
"""

from __future__ import annotations

import re

_URI_PASSWORD = re.compile(r"(\b[a-z][a-z0-9+.-]*://[^:/@\s\"']*:)[^@\s\"']*(@)", re.IGNORECASE)
_KEYWORD_PASSWORD = re.compile(r"(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s\"']+)", re.IGNORECASE)


def redact(text: str) -> str:
    """The text with every password of a URI or a key=value string replaced by ***."""
    return _KEYWORD_PASSWORD.sub(r"\1***", _URI_PASSWORD.sub(r"\1***\2", text))


def one_line(value: object, limit: int | None = None) -> str:
    """str(value) on one line, passwords redacted, cut to ``limit`` characters."""
    text = redact(" ".join(str(value).split()))
    return text if limit is None else text[:limit]
