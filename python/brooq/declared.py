"""How a setting is declared, once: the one mechanism behind brooq.TopicSettings (a
topic's settings, brooq.settings) and brooq.WorkerConfig (a worker's, brooq.config).

A setting is a dataclass field made by :func:`setting`: its default, what it means
(one line: the options' help and the docs), its bounds and how it is shown.
:func:`settings_of` reads a class's fields as :class:`Setting` objects, whose type
(int, timedelta, bool or str, and whether None is a value) comes from the field's
annotation; everything else derives from them: how the setting is read from text (a
``--option``, a ``BROOQ_*`` variable, a Django setting: :meth:`Setting.parse`), its
option and variable names, the default as the docs show it, the refusal of a value
out of bounds (:meth:`Setting.refusal`), and the keyword arguments of the functions
that take the settings (:func:`takes_settings`).

Who checks the bounds: a worker's settings exist only in Python, so
WorkerConfig.validate refuses a value out of them; a topic's are the database's
(brooq.declare_topic raises 22023 out of range, the contract), and their bounds here
only document it (a test holds them to the SQL).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import re
from collections.abc import Callable
from datetime import timedelta
from typing import (
    Any,
    Concatenate,
    ParamSpec,
    Protocol,
    TypeVar,
    cast,
    get_args,
    get_type_hints,
    overload,
)

# --- text ----------------------------------------------------------------------------

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


def parse_bool(text: str) -> bool:
    value = text.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise ValueError("not a boolean (true or false)")


def parse_int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ValueError("not an integer") from None


# How a setting is read from text, by its type.
PARSERS: dict[type, Callable[[str], Any]] = {
    timedelta: parse_duration, int: parse_int, bool: parse_bool, str: str}


# --- the declaration -----------------------------------------------------------------

_KEY = "brooq.setting"  # the field metadata that makes a field a setting


def setting(default: Any, doc: str, *, low: Any = None, high: Any = None,
            below: str | None = None, above: str | None = None, shown: str | None = None,
            variables: tuple[str, ...] | None = None,
            check: Callable[[Any], str | None] | None = None) -> Any:
    """A field that is a setting: its default, what it means (one line), the range of
    its values (``low`` and ``high``, inclusive; None: no bound of its own), what a value
    out of it is told (``below``, ``above``: text after the value, e.g. "is negative"),
    the default as the docs show it when it is derived (``shown``), its environment
    variables when they are not BROOQ_<NAME>, and a ``check`` of a value that is no
    bound (a DSN's syntax): the problem's text, or None."""
    return dataclasses.field(default=default, metadata={_KEY: {
        "doc": doc, "low": low, "high": high, "below": below, "above": above, "shown": shown,
        "variables": variables, "check": check}})


@dataclasses.dataclass(frozen=True)
class Setting:
    """One declared setting, as :func:`settings_of` reads it from its field."""

    name: str
    kind: type  # int, timedelta, bool or str: the annotation without None
    nullable: bool  # None is a value (no limit, or derived from another setting)
    default: Any
    doc: str
    low: Any
    high: Any
    below: str | None
    above: str | None
    shown: str | None
    variables: tuple[str, ...] | None
    check: Callable[[Any], str | None] | None

    @property
    def option(self) -> str:
        """Its command-line option: --max-attempts."""
        return "--" + self.name.replace("_", "-")

    @property
    def variable(self) -> str:
        """Its environment variable (the first of them: the one messages name)."""
        return self.environment[0]

    @property
    def environment(self) -> tuple[str, ...]:
        """Its environment variables, the first one its name in messages: BROOQ_<NAME>."""
        return self.variables or (f"BROOQ_{self.name.upper()}",)

    @property
    def shown_default(self) -> str:
        """Its default as the docs and --help show it."""
        if self.shown is not None:
            return self.shown
        return format_duration(self.default) if isinstance(self.default, timedelta) else str(self.default)

    def parse(self, text: str) -> Any:
        """The value of a text (an option, a variable): ValueError saying why not."""
        return PARSERS[self.kind](text)

    def refusal(self, value: Any) -> str | None:
        """Why ``value`` is refused ("lease: 500ms is too short ..."), or None: out of the
        bounds, not of the setting's type, or refused by its check."""
        if value is None and self.nullable:
            return None
        shown = format_duration(value) if isinstance(value, timedelta) else repr(value)
        if self.kind is int and not isinstance(value, int):
            return f"{self.name}: {shown} {self._range() if self.low is not None else 'is not an integer'}"
        if self.kind is timedelta and not isinstance(value, timedelta):
            return f"{self.name}: {shown} is not a duration (a timedelta, or text such as '30s')"
        if self.low is not None and value < self.low:
            return f"{self.name}: {shown} {self.below or self._range()}"
        if self.high is not None and value > self.high:
            return f"{self.name}: {shown} {self.above or self._range()}"
        problem = self.check(value) if self.check is not None else None
        return None if problem is None else f"{self.name}: {problem}"

    def _range(self) -> str:
        low, high = (format_duration(b) if isinstance(b, timedelta) else str(b) for b in (self.low, self.high))
        kind = "an integer" if self.kind is int else "a duration"
        if self.high is None:
            return "is negative" if self.low in (0, timedelta(0)) else f"is below {low}"
        if self.low is None:
            return f"is above {high}"
        return f"is not {kind} from {low} to {high}"


@functools.cache
def settings_of(cls: type) -> tuple[Setting, ...]:
    """The settings a dataclass declares (its fields made by :func:`setting`, inherited
    ones included), in the order of its fields."""
    hints = get_type_hints(cls)
    found = []
    for f in dataclasses.fields(cls):
        spec = f.metadata.get(_KEY)
        if spec is None:
            continue
        kinds = get_args(hints[f.name]) or (hints[f.name],)
        kind = next(k for k in kinds if k is not type(None))
        if kind not in PARSERS:
            raise TypeError(f"{cls.__name__}.{f.name}: a setting is int, timedelta, bool or str, not {kind}")
        found.append(Setting(name=f.name, kind=kind, nullable=type(None) in kinds, default=f.default, **spec))
    return tuple(found)


# --- the functions that take the settings as keyword arguments -----------------------

P = ParamSpec("P")
A = TypeVar("A")
B = TypeVar("B")
R = TypeVar("R")


class SettingsTaker(Protocol[P]):
    """What :func:`takes_settings` makes: a decorator of ``fn(a, settings)`` or ``fn(a,
    b, settings)`` into ``fn(a, **keywords)`` or ``fn(a, b, **keywords)``."""

    @overload
    def __call__(self, fn: Callable[[A, Any], R], /) -> Callable[Concatenate[A, P], R]: ...

    @overload
    def __call__(self, fn: Callable[[A, B, Any], R], /) -> Callable[Concatenate[A, B, P], R]: ...


def takes_settings(cls: Callable[P, Any], *, named: bool = False) -> SettingsTaker[P]:
    """Give a function whose last parameter is the settings (an instance of ``cls``, a
    dataclass of settings) the keyword arguments of ``cls`` instead: ``fn(name,
    max_attempts=3)`` calls ``fn(name, cls(max_attempts=3))``; or, ``named``, ``fn(name,
    {"max_attempts": 3})``, only the arguments named, checked by ``cls`` first, each
    setting shown with the default None (left as it is). Type checkers and help() see
    every setting, its type and default, from the one declaration; the function's own
    parameters (all but the last) stay positional."""
    declared = {s.name for s in settings_of(cast(type, cls))}
    make = cast(Callable[..., Any], cls)

    def decorate(fn: Callable[..., R]) -> Callable[..., R]:
        @functools.wraps(fn)
        def with_keywords(*args: Any, **kwargs: Any) -> R:
            made = make(**kwargs)  # a TypeError for a name that is no setting
            return fn(*args, dict(kwargs) if named else made)

        own = inspect.signature(fn, eval_str=True)
        keywords = [p.replace(default=None) if named and p.name in declared else p
                    for p in inspect.signature(cls).parameters.values()]
        setattr(with_keywords, "__signature__", own.replace(  # noqa: B010
            parameters=[*list(own.parameters.values())[:-1], *keywords]))
        return with_keywords

    return cast(SettingsTaker[P], decorate)
