"""Typed payloads: a handler's payload parameter annotated with a dataclass, a TypedDict
or a pydantic model receives the payload decoded and validated.

    @worker.handler("charge")
    def charge(job: brooq.Job, order: Order) -> None: ...

The second parameter's annotation chooses the decoder (decoder_of). A payload that
does not fit raises PayloadMismatch, whose message names the field
(``payload does not fit Order: items[1].sku: expected str, got int``); the worker
makes such a job dead at once, after this one attempt, with that message as its
last_error (the settle outcome dead; see outcome.of_exception).

Checked: str, int (not bool), float (int accepted), bool, None, Any, list[X],
tuple[X, ...], dict[str, X], X | Y, Optional, Literal, nested dataclasses and
TypedDicts, pydantic models. Keys a dataclass or TypedDict does not declare are
ignored (a producer may be newer than the worker), as pydantic does by default.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import inspect
import types
import typing
from collections.abc import Callable, Collection
from typing import (
    Any,
    Literal,
    Union,
    get_args,
    get_origin,
    get_type_hints,
    is_typeddict,
)

from brooq.job import Job
from brooq.payload import PayloadMismatch

__all__ = ["PayloadMismatch", "check", "decoder_of", "payload_type", "typed", "with_payload"]


def is_pydantic(tp: Any) -> bool:
    return isinstance(tp, type) and hasattr(tp, "model_validate") and hasattr(tp, "model_fields")


def typed(tp: Any) -> bool:
    """Whether ``tp`` is a type a payload is decoded into."""
    return (isinstance(tp, type) and dataclasses.is_dataclass(tp)) or is_typeddict(tp) \
        or is_pydantic(tp)


def payload_type(fn: Callable[..., Any]) -> Any:
    """The type a handler's second parameter is annotated with: a typed() one, Any for a
    parameter without one (it gets the payload as it is), None when the handler takes
    the job alone."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None
    positional = [p for p in params
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(positional) < 2:
        return None
    try:
        hints = get_type_hints(fn)
    except Exception:  # noqa: BLE001 (an annotation that does not resolve: no decoding)
        hints = {}
    tp = hints.get(positional[1].name, Any)
    return tp if tp is not Job and typed(tp) else Any


def decoder_of(fn: Callable[..., Any]) -> Callable[[Any], Any] | None:
    """How a handler's second parameter is made from the payload; None: the handler
    takes the job alone. A second parameter without a typed annotation gets the payload
    as it is."""
    tp = payload_type(fn)
    if tp is None:
        return None
    if tp is Any:
        return _as_is
    name = getattr(tp, "__name__", str(tp))

    def decode(payload: Any) -> Any:
        try:
            return _convert(payload, tp, "")
        except PayloadMismatch as exc:
            raise PayloadMismatch(f"payload does not fit {name}: {exc}") from None

    return decode


def check(value: Any, tp: Any) -> Any:
    """The producer's check of a payload: ``value`` (decoded JSON) as ``tp``, as the
    worker will decode it, and strictly: a key that ``tp`` (a dataclass or a TypedDict,
    also nested, a pydantic model) does not declare is refused too, since the producer and
    its type are the same code (a misspelt field, not a newer producer; of a pydantic
    model, its own keys, its nested models' as pydantic reads them). PayloadMismatch,
    naming the field, else the decoded value."""
    return _convert(value, tp, "", strict=True)


def with_payload(fn: Callable[..., Any]) -> Callable[[Job], Any]:
    """The handler as the worker calls it, with the job alone: ``fn`` itself, or, when it
    takes a payload parameter, a wrapper that passes the decoded payload too (decoding
    raises PayloadMismatch inside the call, as the handler's own exception would)."""
    decode = decoder_of(fn)
    if decode is None:
        return fn

    @functools.wraps(fn)
    def call(job: Job) -> Any:
        return fn(job, decode(job.payload))

    return call


def _as_is(payload: Any) -> Any:
    return payload


def _where(path: str) -> str:
    return path or "the payload"


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _fail(path: str, expected: str, value: Any) -> PayloadMismatch:
    shown = repr(value)
    shown = shown if len(shown) <= 40 else shown[:37] + "..."
    return PayloadMismatch(f"{_where(path)}: expected {expected}, got {_kind(value)} ({shown})")


def _convert(value: Any, tp: Any, path: str, strict: bool = False) -> Any:
    """``value`` (decoded JSON) as ``tp``: checked, dataclasses built; PayloadMismatch else."""
    if tp is Any or tp is object:
        return value
    if tp is None or tp is type(None):
        if value is not None:
            raise _fail(path, "null", value)
        return None
    origin = get_origin(tp)
    if origin is Union or origin is types.UnionType:
        for arg in get_args(tp):
            try:
                return _convert(value, arg, path, strict)
            except PayloadMismatch:
                pass
        raise _fail(path, " or ".join(_name(a) for a in get_args(tp)), value)
    if origin is Literal:
        if value not in get_args(tp):
            raise _fail(path, "one of " + ", ".join(repr(a) for a in get_args(tp)), value)
        return value
    if origin is typing.Annotated:
        return _convert(value, get_args(tp)[0], path, strict)
    if origin in (list, tuple) or tp in (list, tuple):
        if not isinstance(value, list):
            raise _fail(path, "a list", value)
        args = get_args(tp)
        item = args[0] if args else Any
        if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
            if len(args) != len(value):
                raise _fail(path, f"a list of {len(args)}", value)
            return tuple(_convert(v, a, f"{path}[{i}]", strict) for i, (a, v) in enumerate(zip(args, value)))
        items = [_convert(v, item, f"{path}[{i}]", strict) for i, v in enumerate(value)]
        return tuple(items) if (origin or tp) is tuple else items
    if origin is dict or tp is dict:
        if not isinstance(value, dict):
            raise _fail(path, "an object", value)
        args = get_args(tp)
        item = args[1] if len(args) == 2 else Any
        return {k: _convert(v, item, f"{path}.{k}" if path else k, strict) for k, v in value.items()}
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _dataclass(value, tp, path, strict)
    if is_typeddict(tp):
        return _typeddict(value, tp, path, strict)
    if is_pydantic(tp):
        return _pydantic(value, tp, path, strict)
    if tp is bool:
        if not isinstance(value, bool):
            raise _fail(path, "a boolean", value)
        return value
    if tp is int:
        if not isinstance(value, int) or isinstance(value, bool):
            raise _fail(path, "an integer", value)
        return value
    if tp is float:
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise _fail(path, "a number", value)
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise _fail(path, "a string", value)
        return value
    if isinstance(tp, type) and not isinstance(value, tp):
        raise _fail(path, tp.__name__, value)
    return value


def _name(tp: Any) -> str:
    if tp is type(None):
        return "null"
    return getattr(tp, "__name__", str(tp))


def _field_path(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _unknown(value: dict[str, Any], known: Collection[str], tp: Any, path: str) -> None:
    """Strict: PayloadMismatch for the first key of ``value`` that ``tp`` does not declare,
    offering the closest declared one."""
    for key in value:
        if key not in known:
            close = difflib.get_close_matches(str(key), list(known), n=1, cutoff=0.6)
            also = f" (did you mean {close[0]}?)" if close else ""
            raise PayloadMismatch(f"{_field_path(path, str(key))}: not a field of {_name(tp)}{also}")


def _dataclass(value: Any, tp: Any, path: str, strict: bool = False) -> Any:
    if not isinstance(value, dict):
        raise _fail(path, f"an object ({tp.__name__})", value)
    hints = get_type_hints(tp)
    if strict:
        _unknown(value, [f.name for f in dataclasses.fields(tp) if f.init], tp, path)
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(tp):
        if not f.init:
            continue
        if f.name in value:
            kwargs[f.name] = _convert(value[f.name], hints.get(f.name, Any), _field_path(path, f.name),
                                      strict)
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise PayloadMismatch(f"{_field_path(path, f.name)}: missing")
    try:
        return tp(**kwargs)
    except (TypeError, ValueError) as exc:  # the class's own __post_init__ checks
        raise PayloadMismatch(f"{_where(path)}: {exc}") from None


def _typeddict(value: Any, tp: Any, path: str, strict: bool = False) -> Any:
    if not isinstance(value, dict):
        raise _fail(path, f"an object ({tp.__name__})", value)
    hints = get_type_hints(tp)
    if strict:
        _unknown(value, list(hints), tp, path)
    out = dict(value)
    for key, hint in hints.items():
        if key in value:
            out[key] = _convert(value[key], hint, _field_path(path, key), strict)
        elif key in tp.__required_keys__:
            raise PayloadMismatch(f"{_field_path(path, key)}: missing")
    return out


def _pydantic(value: Any, tp: Any, path: str, strict: bool = False) -> Any:
    config = getattr(tp, "model_config", None) or {}
    if strict and isinstance(value, dict) and config.get("extra") != "allow":
        names = [name for name, f in tp.model_fields.items()
                 for name in (name, getattr(f, "alias", None)) if name]
        _unknown(value, names, tp, path)
    try:
        return tp.model_validate(value)
    except Exception as exc:  # pydantic.ValidationError, without importing pydantic
        errors = getattr(exc, "errors", None)
        if not callable(errors):
            raise
        first = errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        where = _field_path(path, where) if where else _where(path)
        more = f" (and {len(errors()) - 1} more)" if len(errors()) > 1 else ""
        raise PayloadMismatch(f"{where}: {first.get('msg', exc)}{more}") from None
