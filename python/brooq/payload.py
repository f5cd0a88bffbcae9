"""JSON encoding of payloads and results: anything json.dumps takes, plus dataclasses
and pydantic models (``model_dump(mode="json")``); a TypedDict is a dict already.

Dataclass instances (also nested in lists and dicts) become objects through
``dataclasses.asdict``. NaN and infinities are refused: jsonb cannot store them.

Decoding: jsonb holds values Python's json module cannot decode (nested deeper than
the interpreter's recursion limit, an integer longer than sys.get_int_max_str_digits()).
Such a value is read as an Undecodable, never raised while the rows are read: one job
must not fail the read of the jobs beside it.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from json.scanner import make_scanner
from typing import Any, Self

import psycopg
from psycopg import pq
from psycopg.abc import AdaptContext
from psycopg.adapt import Buffer, Loader
from psycopg.types.json import Jsonb

_scan: Any = make_scanner(json.JSONDecoder())  # type: ignore[arg-type]  # the C scanner json.loads uses


def _default(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    dump = getattr(value, "model_dump", None)  # a pydantic model (pydantic is not imported)
    if dump is not None and not isinstance(value, type) and hasattr(type(value), "model_fields"):
        return dump(mode="json")
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


# json.dumps with any option builds a JSONEncoder per call (~0.7 us of ~2.4)
_encode = json.JSONEncoder(default=_default, allow_nan=False, separators=(",", ":")).encode


def to_json(value: Any) -> str:
    """The JSON text of a payload or result; TypeError/ValueError when it has none."""
    return _encode(value)


def jsonb(value: Any) -> Jsonb:
    """A psycopg jsonb parameter for a payload."""
    return Jsonb(value, dumps=to_json)


class Undecodable(str):
    """Stands for a jsonb value Python cannot decode: its text says so, ``cause`` says why
    ("RecursionError: maximum recursion depth exceeded ..."). The worker makes a job whose
    payload is one dead at once; brooq.list_jobs gives one in place of such a payload,
    result or progress."""

    cause: str

    def __new__(cls, cause: str) -> Self:
        self = super().__new__(cls, f"undecodable JSON ({cause})")
        self.cause = cause
        return self

    def __getnewargs__(self) -> tuple[str]:  # copy and pickle make it from its cause
        return (self.cause,)


class PayloadMismatch(ValueError):
    """The payload does not fit the type the handler declares (brooq.typed): never
    retried to success, so the worker makes its job dead at once (outcome.of_exception)."""


# Raised by json's decoder on jsonb text: RecursionError past the recursion limit,
# ValueError for an integer past int_max_str_digits (JSONDecodeError is one as well).
UNDECODABLE = (RecursionError, ValueError)


def undecodable(exc: BaseException) -> Undecodable:
    message = " ".join(str(exc).split())
    return Undecodable(f"{type(exc).__name__}: {message}"[:300])


class PayloadLoader(Loader):
    """jsonb text from the server to Python, as json.loads would, ~4x cheaper per payload.

    json.loads(bytes) guesses the encoding, decodes, skips whitespace and checks the
    tail in Python before the C scanner runs: ~4.5 us for {"seq": 1} against ~1 us
    here, on every claimed job. The server's jsonb text is UTF-8 with nothing around
    the value; anything else still goes through json.loads. A value it cannot decode is
    an Undecodable (the try costs nothing when nothing is raised)."""

    def load(self, data: Buffer) -> Any:
        text = str(data, "utf-8")
        try:
            try:
                value, end = _scan(text, 0)
            except StopIteration:
                return json.loads(text)
            return value if end == len(text) else json.loads(text)
        except UNDECODABLE as exc:
            return undecodable(exc)


def register_loaders(conn: psycopg.Connection[Any]) -> None:
    """Load jsonb columns of this connection with PayloadLoader (the worker's connection)."""
    conn.adapters.register_loader("jsonb", PayloadLoader)


@functools.lru_cache(maxsize=16)
def _guarded(base: type[Loader]) -> type[Loader]:
    """``base`` (a connection's jsonb loader), with an undecodable value as Undecodable."""

    class Guarded(Loader):
        def __init__(self, oid: int, context: AdaptContext | None = None) -> None:
            super().__init__(oid, context)
            self._load = base(oid, context).load

        def load(self, data: Buffer) -> Any:
            try:
                return self._load(data)
            except UNDECODABLE as exc:
                return undecodable(exc)

    return Guarded


def guard_jsonb(cursor: psycopg.Cursor[Any] | psycopg.AsyncCursor[Any]) -> None:
    """Read this cursor's jsonb values with its connection's own loader (the application's
    json.loads, if it set one), an undecodable one as an Undecodable."""
    adapters = cursor.adapters
    base = adapters.get_loader(adapters.types["jsonb"].oid, pq.Format.TEXT)
    if base is not None:
        adapters.register_loader("jsonb", _guarded(base))
