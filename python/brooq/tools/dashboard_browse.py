"""The dashboard's jobs page (/jobs) and its bulk actions: which index a list reads,
its filters, its keyset cursor and how the groups it reads become one page
(docs/dashboard.md, "Browsing jobs").

Every list reads one index range per group (a topic, or a topic and a state) in the
list's order, strictly after the cursor, and at most a budget of entries in all
(MAX_SCANNED, shared by the groups, at least a page each): a filter no index answers
(a payload field, done among the dead, scheduled among the ready) costs at most that
budget, and a page that used it up says so and offers the next one from where it
stopped. Pages follow each other by keyset, never by OFFSET. brooq.tools.queries
holds the statements; this module chooses one and merges what it returns, without a
database (tests/test_dashboard_browse.py).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, LiteralString, NamedTuple

from brooq.tools import queries as tool_queries

PAGE = 100  # jobs on a page of the list
MAX_SCANNED = 10_000  # index entries one page (or one bulk selection) reads at most, in all
BULK_MAX = 1000  # jobs one bulk cancel or re-drive touches at most
MAX_FILTER = 200  # characters of the key or the payload filter
MAX_BIGINT = 2**63 - 1
MAX_INT = 2**31 - 1
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MICROSECOND = timedelta(microseconds=1)

# The states the list shows, "" the default (the dead and the failed). scheduled:
# pending with its time to come (a delay); pending: ready now.
STATES = ("", "pending", "scheduled", "waiting", "processing", "failed", "done", "dead", "canceled")
CANCELABLE = ("pending", "scheduled", "waiting", "processing", "failed")  # bulk cancel
REDRIVABLE = ("dead", "canceled")  # bulk re-drive
ACTIONS = ("cancel", "retry")


class FilterError(ValueError):
    """A filter the list refuses (400): its catalogue key, and the fields of the text."""

    def __init__(self, key: str, **fields: Any) -> None:
        super().__init__(key)
        self.key = key
        self.fields = fields


@dataclass(frozen=True)
class Filters:
    """What the list shows: a topic (None: every one), a state of STATES, an
    idempotency key, a payload filter as typed and as the JSON it is contained in."""

    topic: str | None = None
    state: str = ""
    key: str | None = None
    payload: str | None = None
    contains: str | None = None

    @staticmethod
    def of(fields: dict[str, str]) -> Filters:
        """From a query string or a form (FilterError: a state, key or payload refused)."""
        state = fields.get("state", "")
        if state not in STATES:
            raise FilterError("dash.choose_state")
        key = fields.get("key", "").strip() or None
        payload = fields.get("payload", "").strip() or None
        for text in (key, payload, fields.get("topic")):
            if text is not None and len(text) > MAX_FILTER:
                raise FilterError("dash.filter_too_long", limit=MAX_FILTER)
        return Filters(fields.get("topic") or None, state, key, payload,
                       containment(payload) if payload is not None else None)

    def query(self) -> list[tuple[str, str]]:
        """As a query string's pairs, the empty ones left out."""
        pairs = [("topic", self.topic), ("state", self.state), ("key", self.key), ("payload", self.payload)]
        return [(k, v) for k, v in pairs if v]


def _finite(text: str) -> Any:
    raise ValueError(text)  # NaN, Infinity: not JSON, nor jsonb


def containment(text: str) -> str:
    """The JSON object a payload must contain (jsonb @>) for the filter ``text``: a JSON
    object as is, or ``field = value`` (``payload.`` in front optional, dots for nested
    fields), the value JSON (42, "x", true, null) or else the text itself."""
    if text.startswith("{"):
        try:
            value = json.loads(text, parse_constant=_finite)
        except (ValueError, RecursionError):
            raise FilterError("dash.bad_payload_filter") from None
        if not isinstance(value, dict):
            raise FilterError("dash.bad_payload_filter")
        return json.dumps(value, ensure_ascii=False)
    path, sep, given = text.partition("=")
    names = path.strip().split(".")
    if names[0] == "payload" and len(names) > 1:
        names = names[1:]
    if not sep or not all(n.strip() for n in names):
        raise FilterError("dash.bad_payload_filter")
    given = given.strip()
    try:
        value = json.loads(given, parse_constant=_finite)
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(given)
    except (ValueError, RecursionError):
        value = given
    for name in reversed(names):
        value = {name.strip(): value}
    return json.dumps(value, ensure_ascii=False)


class Scanned(NamedTuple):
    """A row of a DASHBOARD_BROWSE_* statement: a job its group read (hit: the filters
    match it), n its rank in the group's read, and the columns of the list's order."""

    grp: str
    id: int
    hit: bool
    n: int
    priority: int | None
    available_at: datetime | None
    updated_at: datetime | None


def _us(at: datetime | None) -> int:
    assert at is not None
    return (at - EPOCH) // MICROSECOND


def _at(us: int) -> datetime:
    try:
        return EPOCH + us * MICROSECOND
    except OverflowError:
        raise FilterError("dash.bad_cursor") from None


def _ints(text: str, count: int) -> list[int]:
    parts = text.split("_")
    if len(parts) != count or not all(p.lstrip("-").isascii() and p.lstrip("-").isdigit()
                                       and len(p) <= 20 for p in parts):
        raise FilterError("dash.bad_cursor")
    numbers = [int(p) for p in parts]
    if not all(-MAX_BIGINT - 1 <= n <= MAX_BIGINT for n in numbers):
        raise FilterError("dash.bad_cursor")
    return numbers


@dataclass(frozen=True)
class Order:
    """A list's order: the statement that reads it, how a row ranks in it (ascending
    along the list), and its cursor as text and as the statement's parameters."""

    query: LiteralString
    rank: Callable[[Scanned], tuple[int, ...]]
    cursor: Callable[[Scanned], str]
    params: Callable[[str | None], dict[str, Any]]
    per_topic: bool  # a group a topic (else one group for every topic)


def _newest_params(after: str | None) -> dict[str, Any]:
    (last,) = _ints(after, 1) if after is not None else [MAX_BIGINT]
    return {"id": last}


def _finished_params(after: str | None) -> dict[str, Any]:
    if after is None:
        return {"at": datetime.max.replace(tzinfo=UTC), "id": MAX_BIGINT}
    us, last = _ints(after, 2)
    return {"at": _at(us), "id": last}


def _claim_params(after: str | None) -> dict[str, Any]:
    if after is None:  # the highest priority from the start, then every lower one
        return {"priority": MAX_INT, "at": datetime.min.replace(tzinfo=UTC), "id": -MAX_BIGINT - 1}
    priority, us, last = _ints(after, 3)
    if not -MAX_INT - 1 <= priority <= MAX_INT:
        raise FilterError("dash.bad_cursor")
    return {"priority": priority, "at": _at(us), "id": last}


NEWEST = Order(tool_queries.DASHBOARD_BROWSE_FAILURES, lambda r: (-r.id,), lambda r: str(r.id),
               _newest_params, True)
FINISHED = Order(tool_queries.DASHBOARD_BROWSE_DONE, lambda r: (-_us(r.updated_at), -r.id),
                 lambda r: f"{_us(r.updated_at)}_{r.id}", _finished_params, True)
CLAIM = Order(tool_queries.DASHBOARD_BROWSE_READY,
              lambda r: (-(r.priority or 0), _us(r.available_at), r.id),
              lambda r: f"{r.priority}_{_us(r.available_at)}_{r.id}", _claim_params, True)
IN_FLIGHT = Order(tool_queries.DASHBOARD_BROWSE_PROCESSING, NEWEST.rank, NEWEST.cursor,
                  _newest_params, False)
WAITING = Order(tool_queries.DASHBOARD_BROWSE_WAITING, NEWEST.rank, NEWEST.cursor,
                _newest_params, False)
BY_KEY = Order(tool_queries.DASHBOARD_BROWSE_KEY, NEWEST.rank, NEWEST.cursor, _newest_params, False)


@dataclass(frozen=True)
class Plan:
    """How one page of a list is read: the statement, its parameters, the groups."""

    order: Order
    params: dict[str, Any]
    page: int


def plan(filters: Filters, topics: Sequence[str], after: str | None, page: int = PAGE) -> Plan:
    """The statement and parameters of the page of ``filters`` after the cursor
    ``after`` over ``topics`` (every topic, or the chosen one). FilterError: a cursor
    that is not one of this order's."""
    state = filters.state
    states = {"": ["dead", "failed"], "scheduled": ["pending"]}.get(state, [state])
    ready = {"pending": True, "scheduled": False}.get(state)
    if filters.key is not None:
        order = BY_KEY
    elif state in ("", "failed", "dead", "canceled"):
        order = NEWEST
    else:
        order = {"done": FINISHED, "pending": CLAIM, "scheduled": CLAIM,
                 "processing": IN_FLIGHT, "waiting": WAITING}[state]
    groups = max(1, len(topics) * (len(states) if order is NEWEST else 1) if order.per_topic else 1)
    # rows a group returns at most: a page's worth, read from the index alone; where
    # each row costs a read of the table too (done: its state; a payload filter), a
    # share of a page when there are several groups (a quarter page at least): the
    # merge shows what every group covered, the rest on the next page
    costly = order is FINISHED or filters.contains is not None
    keep = (max(page // 4, 2 * page // groups) if costly and groups > 1 else page) + 2
    params = {"topics": list(topics), "states": states, "ready": ready, "key": filters.key,
              "contains": filters.contains, "keep": keep,
              "scan": max(keep, MAX_SCANNED // groups), **order.params(after)}
    if order is BY_KEY and after is not None:
        raise FilterError("dash.bad_cursor")  # one job a topic: a single page
    return Plan(order, params, page)


@dataclass(frozen=True)
class Page:
    """One page of a list: the ids to show in order, the cursor of the next page (None:
    the last), and whether the page is short because the read budget ran out."""

    ids: list[int]
    next: str | None
    partial: bool


def merge(p: Plan, rows: Sequence[Scanned]) -> Page:
    """The groups' rows as one page. A group that returned as many rows as it may, or
    its last budgeted entry, is known only up to its last row: the page shows nothing
    past the nearest such row and goes on from there."""
    rank, scan, keep = p.order.rank, p.params["scan"], p.params["keep"]
    last: dict[str, Scanned] = {}
    count: dict[str, int] = {}
    for r in rows:
        count[r.grp] = count.get(r.grp, 0) + 1
        if r.grp not in last or r.n > last[r.grp].n:
            last[r.grp] = r
    edges = [r for g, r in last.items() if count[g] >= keep or r.n >= scan]
    bound = min(edges, key=rank) if edges else None
    hits = sorted((r for r in rows if r.hit and (bound is None or rank(r) <= rank(bound))), key=rank)
    shown = hits[:p.page]
    if len(hits) > p.page:
        return Page([r.id for r in shown], p.order.cursor(shown[-1]), False)
    if bound is not None:
        return Page([r.id for r in shown], p.order.cursor(bound), True)
    return Page([r.id for r in shown], None, False)


def can(action: str, state: str) -> bool:
    """Whether a bulk ``action`` (cancel, retry) applies to a list of ``state``."""
    return state in (CANCELABLE if action == "cancel" else REDRIVABLE if action == "retry" else ())
