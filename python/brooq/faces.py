"""How a declared call runs, and the faces made from its declaration.

A call of brooq.calls is declared once as a function of its arguments that returns a
:class:`Statement`: its SQL, its parameters, how its rows become its result, the role it
needs and how its errors read. This module runs a statement on a psycopg connection
(:func:`run`) or an AsyncConnection (:func:`run_async`), and makes of a declaration the
function a user calls: :func:`sync` (brooq.enqueue(conn, ...)), :func:`awaited`
(brooq.aio), :func:`via` and :func:`via_async` (a framework's handle on a connection,
brooq.contrib). Each face has the declaration's parameters, result type and doc; only
its own first parameter (the connection) is its own.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Concatenate, Generic, LiteralString, ParamSpec, TypeVar, cast, get_args

import psycopg
from psycopg.types.json import Jsonb

from brooq import tracing
from brooq.errors import KeyBusy, mapped
from brooq.payload import guard_jsonb

Conn = psycopg.Connection[Any]
AsyncConn = psycopg.AsyncConnection[Any]

P = ParamSpec("P")
T = TypeVar("T")
B = TypeVar("B")


# Not frozen: a frozen dataclass's __init__ sets each field through object.__setattr__,
# ~4 us more for the Statement and Traced of every enqueue (its client CPU is ~90 us).
@dataclass(slots=True)
class Read(Generic[T]):
    """How a statement's rows become the call's result: the cursor's row factory (None:
    tuples), one row or all of them, what makes the result of it, and whether it reads
    jsonb (guarded: an undecodable value is a brooq.Undecodable, never an error)."""

    rows: Any
    many: bool
    then: Callable[[Any], T]
    json: bool = False


@dataclass(slots=True)
class Traced:
    """A producer span around the call (brooq.tracing): its topic, operation, batch size,
    and where in the parameters the trace_context argument goes."""

    topic: str
    operation: str
    count: int | None
    at: int


@dataclass(slots=True)
class Statement(Generic[T]):
    """One call of a brooq SQL function, made of the call's arguments: what every face
    runs. ``needs``: the role that grants it (a 42501 names it); ``busy``: a KeyBusy
    rewritten to say which key or group waited (PostgreSQL's lock timeout cannot)."""

    sql: LiteralString
    params: Sequence[Any] | Mapping[str, Any]
    needs: str
    read: Read[T]
    traced: Traced | None = None
    busy: Callable[[KeyBusy], KeyBusy] | None = None


def _with_trace(st: Statement[Any], trace_context: dict[str, str] | None) -> list[Any]:
    assert st.traced is not None and isinstance(st.params, list)
    at = st.traced.at
    return [*st.params[:at], None if trace_context is None else Jsonb(trace_context), *st.params[at:]]


def _execute(conn: Conn, st: Statement[T], params: Sequence[Any] | Mapping[str, Any]) -> T:
    try:
        with mapped(st.needs, conn):
            cur = conn.cursor(row_factory=st.read.rows) if st.read.rows else conn.cursor()
            if st.read.json:
                guard_jsonb(cur)
            cur.execute(st.sql, params)
            got = cur.fetchall() if st.read.many else cur.fetchone()
    except KeyBusy as exc:
        if st.busy is None:
            raise
        raise st.busy(exc) from exc.__cause__
    return st.read.then(got)


async def _execute_async(conn: AsyncConn, st: Statement[T],
                         params: Sequence[Any] | Mapping[str, Any]) -> T:
    try:
        with mapped(st.needs, conn):
            cur = conn.cursor(row_factory=st.read.rows) if st.read.rows else conn.cursor()
            if st.read.json:
                guard_jsonb(cur)
            await cur.execute(st.sql, params)
            got = await (cur.fetchall() if st.read.many else cur.fetchone())
    except KeyBusy as exc:
        if st.busy is None:
            raise
        raise st.busy(exc) from exc.__cause__
    return st.read.then(got)


def run(conn: Conn, st: Statement[T]) -> T:
    """Run the statement on the caller's connection, in its transaction."""
    if st.traced is None:
        return _execute(conn, st, st.params)
    t = st.traced
    return tracing.send(t.topic, t.operation, t.count,
                        lambda context: _execute(conn, st, _with_trace(st, context)))


async def run_async(conn: AsyncConn, st: Statement[T]) -> T:
    """run() on a psycopg.AsyncConnection."""
    if st.traced is None:
        return await _execute_async(conn, st, st.params)
    t = st.traced
    return await tracing.send_async(t.topic, t.operation, t.count,
                                    lambda context: _execute_async(conn, st, _with_trace(st, context)))


def refuse_async(conn: Any, name: str) -> None:
    """A clear error for an AsyncConnection given to a sync face (it would fail later,
    with "'coroutine' object has no attribute 'fetchone'")."""
    if isinstance(conn, psycopg.AsyncConnection):
        raise TypeError(f"brooq.{name} takes a psycopg.Connection; on a psycopg.AsyncConnection "
                        f"use: from brooq import aio; await aio.{name}(conn, ...)")


def dress(face: Callable[..., Any], declaration: Callable[..., Any], module: str, *,
          before: Sequence[inspect.Parameter] = (), among: Sequence[inspect.Parameter] = ()) -> None:
    """Give a face the declaration's name, doc and signature (help() and the signature
    test read it), with the face's own parameters: ``before`` the declared ones (its
    connection), ``among`` them (keyword-only, after the declared keywords)."""
    sig = signature(declaration)
    result = get_args(sig.return_annotation)[0]  # Statement[T] -> T
    face.__name__ = face.__qualname__ = declaration.__name__
    face.__module__ = module
    face.__doc__ = declaration.__doc__
    ordered = [*before, *sig.parameters.values()]
    at = next((i for i, p in enumerate(ordered) if p.kind is inspect.Parameter.VAR_KEYWORD), len(ordered))
    setattr(face, "__signature__", sig.replace(  # noqa: B010
        parameters=[*ordered[:at], *among, *ordered[at:]], return_annotation=result))


@functools.cache
def signature(declaration: Callable[..., Any]) -> inspect.Signature:
    """A declaration's signature, its annotations evaluated (the types themselves)."""
    return inspect.signature(declaration, eval_str=True)


def first(name: str, annotation: Any) -> inspect.Parameter:
    """A face's own first parameter: the connection, or what holds one."""
    return inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=annotation)


def _split(args: tuple[Any, ...], kwargs: dict[str, Any], name: str) -> tuple[Any, tuple[Any, ...]]:
    """The face's first argument, given by position or (as a keyword) by ``name``."""
    return (args[0], args[1:]) if args else (kwargs.pop(name), args)


def sync(declaration: Callable[P, Statement[T]], module: str) -> Callable[Concatenate[Conn, P], T]:
    """The face of a declaration on a psycopg.Connection: ``fn(conn, ...)``."""
    name = declaration.__name__

    def face(*args: Any, **kwargs: Any) -> T:
        conn, rest = _split(args, kwargs, "conn")
        refuse_async(conn, name)
        return run(conn, declaration(*rest, **kwargs))

    dress(face, declaration, module, before=[first("conn", Conn)])
    return cast(Callable[Concatenate[Conn, P], T], face)


def awaited(declaration: Callable[P, Statement[T]],
            module: str) -> Callable[Concatenate[AsyncConn, P], Coroutine[Any, Any, T]]:
    """The face of a declaration on a psycopg.AsyncConnection: ``await fn(conn, ...)``."""

    async def face(*args: Any, **kwargs: Any) -> T:
        conn, rest = _split(args, kwargs, "conn")
        return await run_async(conn, declaration(*rest, **kwargs))

    dress(face, declaration, module, before=[first("conn", AsyncConn)])
    return cast(Callable[Concatenate[AsyncConn, P], Coroutine[Any, Any, T]], face)


def via(connection: Callable[[B], Conn], declaration: Callable[P, Statement[T]],
        module: str) -> Callable[Concatenate[B, P], T]:
    """The face of a declaration on what ``connection`` finds a psycopg connection in (a
    framework's Session, say): ``fn(bind, ...)``, its first parameter ``connection``'s."""
    own = next(iter(signature(connection).parameters.values()))

    def face(*args: Any, **kwargs: Any) -> T:
        bind, rest = _split(args, kwargs, own.name)
        return run(connection(bind), declaration(*rest, **kwargs))

    dress(face, declaration, module, before=[own])
    return cast(Callable[Concatenate[B, P], T], face)


def via_async(connection: Callable[[B], Awaitable[AsyncConn]], declaration: Callable[P, Statement[T]],
              module: str) -> Callable[Concatenate[B, P], Coroutine[Any, Any, T]]:
    """via() for a framework's async handle: ``await fn(bind, ...)``."""
    own = next(iter(signature(connection).parameters.values()))

    async def face(*args: Any, **kwargs: Any) -> T:
        bind, rest = _split(args, kwargs, own.name)
        return await run_async(await connection(bind), declaration(*rest, **kwargs))

    dress(face, declaration, module, before=[own])
    return cast(Callable[Concatenate[B, P], Coroutine[Any, Any, T]], face)
