"""Text for a terminal: ages and settings as short durations, plain tables, and one
line for an error (its SQLSTATE and condition name included). Shared by the CLI and
the demo."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime, timedelta

import psycopg
import psycopg.errors

from brooq.errors import BrooqError
from brooq.messages import _
from brooq.redact import one_line


def format_duration(value: timedelta | None) -> str:
    """An age, rounded for reading: 640ms, 2.7s, 3.2m, 5.0h, 2.1d."""
    if value is None:
        return "-"
    seconds = value.total_seconds()
    if seconds < 1:
        return f"{seconds * 1000:.0f}ms"
    if seconds < 120:
        return f"{seconds:.1f}s"
    if seconds < 7200:
        return f"{seconds / 60:.1f}m"
    if seconds < 172800:
        return f"{seconds / 3600:.1f}h"
    return f"{seconds / 86400:.1f}d"


def format_setting(value: timedelta) -> str:
    """A setting, exactly, in its largest whole unit: 100ms, 1s, 1m, 30d (1m30s as 90s)."""
    ms = round(value.total_seconds() * 1000)
    if ms == 0:
        return "0s"
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000)):
        if ms % size == 0:
            return f"{ms // size}{unit}"
    return f"{ms}ms"


def setting_text(value: object) -> str:
    """A setting's value as the options take it: 30s, on, none."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, timedelta):
        return format_setting(value)
    return str(value)


def format_time(value: datetime | None) -> str:
    return value.isoformat(sep=" ", timespec="milliseconds") if value else "-"


def format_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A plain text table; numbers right-aligned."""
    cells = [[str(h) for h in headers]] + [["-" if v is None else str(v) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    numeric = [all(isinstance(row[i], int | float) for row in rows) and bool(rows)
               for i in range(len(headers))]

    def line(values: Sequence[str]) -> str:
        return "  ".join(v.rjust(w) if num else v.ljust(w)
                         for v, w, num in zip(values, widths, numeric, strict=True)).rstrip()

    out = [line(cells[0]), "  ".join("-" * w for w in widths)]
    out += [line(r) for r in cells[1:]]
    return "\n".join(out)


# --- errors ---------------------------------------------------------------------

def condition_name(sqlstate: str) -> str:
    """42704 -> undefined_object (PostgreSQL's condition name for the SQLSTATE)."""
    try:
        name = psycopg.errors.lookup(sqlstate).__name__
    except KeyError:
        return "unknown condition"
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def describe(exc: BaseException, hint: str | None = None) -> str:
    """One line for the user: the message, [SQLSTATE condition], and the hint if any
    (``hint``: in place of the error's own)."""
    cause: BaseException | None = exc
    while cause is not None and not isinstance(cause, psycopg.Error):
        cause = cause.__cause__ or cause.__context__
    if isinstance(exc, BrooqError) and isinstance(cause, psycopg.Error):  # brooq's reading of it
        message, sqlstate, own_hint = exc.reason, cause.sqlstate, exc.hint
    elif isinstance(cause, psycopg.Error):
        message = cause.diag.message_primary or str(cause) or type(cause).__name__
        sqlstate, own_hint = cause.sqlstate, cause.diag.message_hint
    else:  # a brooq error raised by Python itself, or any other exception
        message = str(exc) or type(exc).__name__
        sqlstate, own_hint = getattr(exc, "sqlstate", None), None
    hint = hint or own_hint
    text = one_line(message)
    if sqlstate in ("3F000", "42P01", "42883") and "brooq" in text and not hint:
        hint = _("text.not_deployed_hint")
    if sqlstate:
        text += f" [{sqlstate} {condition_name(sqlstate)}]"
    if hint:
        text += f"; hint: {' '.join(hint.split())}"
    return text
