"""`brooq dashboard`: a web page over the queue (docs/dashboard.md).

Starlette and Uvicorn (the optional extra dashboard, brooq.extras), pages rendered on the
server (brooq.tools.dashboard_html), no JavaScript. It reads the views
brooq.topic_stats, brooq.in_flight and brooq.jobs; its actions (cancel, re-drive,
pause and resume a topic) call the brooq functions and need brooq_admin in the
database, and the dashboard's token in the browser.

The token (docs/security.md, "The dashboard"): without one the dashboard is read-only
and refuses every action (403). With one, an action is allowed for
  - a request carrying ``Authorization: Bearer <token>`` (scripts), or
  - a browser that logged in: POST /login with the token (compared with
    hmac.compare_digest) sets a cookie brooq_session = "<expiry>.<HMAC(token, expiry)>"
    (HttpOnly, SameSite=Strict, 8 hours), never the token itself; each form of an
    action carries a CSRF field, HMAC(token, that cookie), checked in constant time,
    and a request whose Origin is not this dashboard's is refused.
Changing the token ends every session. /healthz needs no token.

The Host check (Hosts): every request, /healthz and /login included, is answered only
when its Host header names this dashboard, else 421 before anything is read: a page of
another site whose name an attacker points at this address (DNS rebinding) reads
nothing.

Every response, an error's included, carries SECURITY_HEADERS (SecurityHeaders, and
internal_error for the 500 Starlette writes outside the middleware).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import ipaddress
import socket
import sys
import threading
import time
import urllib.parse
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, NamedTuple, TypeAlias

import psycopg
import psycopg.errors
from psycopg.rows import class_row

from brooq import admin, config, producer, queries
from brooq.errors import ADMIN, BrooqError, PermissionDenied, UnknownTopic, mapped
from brooq.extras import install_hint
from brooq.lifecycle import stop_signals
from brooq.messages import _, _n
from brooq.redact import one_line
from brooq.rows import TopicStats
from brooq.tools import dashboard_browse as listing
from brooq.tools import dashboard_html as html
from brooq.tools import queries as tool_queries
from brooq.tools.dashboard_browse import FilterError, Filters
from brooq.tools.dashboard_html import InFlight, JobLine, JobView, ListedJob, StepLine, TreeNode

try:
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.middleware import Middleware
    from starlette.requests import Request
    from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
    from starlette.routing import Route
    from starlette.types import ASGIApp, Receive, Scope, Send
except ImportError:  # pragma: no cover - the extra is not installed
    Starlette = None  # type: ignore[assignment,misc]

HINT = "install the extra dashboard: " + install_hint("dashboard")
COOKIE = "brooq_session"
SESSION_SECONDS = 8 * 3600
MIN_TOKEN = 16  # characters: `python -c 'import secrets; print(secrets.token_urlsafe(32))'`
MINUTES = 15  # the throughput chart's window
LIST_LIMIT = 200  # rows on a list page
MAX_FORM = 4096  # bytes of a form (an action's form is a few dozen)

# The actions' flashes: what the page says after one (catalogue keys dash.flash.<name>).
FLASH = ("canceled", "not-canceled", "retried", "not-retried", "paused", "not-paused",
         "resumed", "not-resumed", "retried-dead", "not-retried-dead", "login", "logout")
COUNTED_FLASH = ("bulk-canceled", "bulk-retried")  # with ?n=: how many jobs


class Throughput(NamedTuple):
    """One row of tool_queries.DASHBOARD_THROUGHPUT: finished jobs of a topic in one minute."""

    topic: str
    minute: datetime
    done: int
    dead: int


MINUTE = timedelta(minutes=1)
SETTLED = timedelta(seconds=5)  # a minute is complete this long after its end


class MinuteCounts:
    """Jobs finished per topic and minute, the complete minutes kept: a page reads only
    the minutes since the last page (a minute's count changes afterwards only when its
    rows are purged or re-driven). Shared by the request threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: dict[str, dict[datetime, tuple[int, int]]] = {}

    def read(self, conn: psycopg.Connection[Any], topics: Sequence[str]
             ) -> dict[str, list[tuple[int, int]]]:
        """Each topic's (done, dead) per minute over the last MINUTES, oldest first."""
        now: datetime = conn.execute(tool_queries.DASHBOARD_CLOCK).fetchone()[0]  # type: ignore[index]
        current = now.replace(second=0, microsecond=0)
        window = [current - (MINUTES - 1 - i) * MINUTE for i in range(MINUTES)]
        with self._lock:
            kept = {t: {m: c for m, c in self._kept.get(t, {}).items() if m >= window[0]}
                    for t in topics}
        sinces = [next((m for m in window if m not in kept[t]), current) for t in topics]
        rows = conn.cursor(row_factory=class_row(Throughput)).execute(
            tool_queries.DASHBOARD_THROUGHPUT, {"topics": list(topics), "sinces": sinces}).fetchall()
        read: dict[str, dict[datetime, tuple[int, int]]] = {t: {} for t in topics}
        for r in rows:
            read[r.topic][r.minute] = (r.done, r.dead)
        series = {}
        for t, since in zip(topics, sinces, strict=True):
            for m in window:
                if m >= since and m + MINUTE + SETTLED <= now:  # complete: keep it, zeros too
                    kept[t][m] = read[t].get(m, (0, 0))
            series[t] = [kept[t].get(m) or read[t].get(m, (0, 0)) for m in window]
        with self._lock:
            self._kept = kept
        return series


def flash_text(name: str, count: str = "") -> str:
    """What the page says after the action `name` ("" for none, or an unknown one); a
    bulk action's with how many jobs it changed (``count``, digits)."""
    if name in COUNTED_FLASH:
        n = int(count) if count.isascii() and count.isdigit() and len(count) <= 7 else 0
        return _n("dash.flash." + name, n)
    return _("dash.flash." + name) if name in FLASH else ""


def available() -> bool:
    return Starlette is not None


# --- the token ----------------------------------------------------------------------

@dataclass(frozen=True)
class Auth:
    """Who may act: the holder of ``token`` (None: nobody, the dashboard is read-only)."""

    token: str | None

    def _mac(self, message: str) -> str:
        assert self.token is not None
        return hmac.new(self.token.encode(), message.encode(), hashlib.sha256).hexdigest()

    def matches(self, given: str) -> bool:
        """Whether ``given`` is the token, in constant time."""
        return self.token is not None and hmac.compare_digest(given.encode(), self.token.encode())

    def new_session(self, now: float) -> str:
        expiry = int(now) + SESSION_SECONDS
        return f"{expiry}.{self._mac(f'session:{expiry}')}"

    def valid_session(self, value: str | None, now: float) -> bool:
        if self.token is None or not value:
            return False
        expiry, _, mac = value.partition(".")
        if not expiry.isdigit() or int(expiry) < now:
            return False
        return hmac.compare_digest(mac.encode(), self._mac(f"session:{expiry}").encode())

    def csrf(self, session: str) -> str:
        """The CSRF field of this session's forms."""
        return self._mac(f"csrf:{session}")

    def bearer(self, request: Request) -> bool:
        scheme, _, given = request.headers.get("authorization", "").partition(" ")
        return scheme.lower() == "bearer" and self.matches(given.strip())

    def session(self, request: Request) -> str | None:
        """The request's valid session cookie, if it has one."""
        value = request.cookies.get(COOKIE)
        return value if self.valid_session(value, time.time()) else None


def same_origin(request: Request) -> bool:
    """A browser's POST from a page of this dashboard (no Origin: not a browser's form).
    The Origin must name the very host the request was sent to, which Hosts allowed."""
    origin = request.headers.get("origin")
    if origin is None:
        return True
    parts = urllib.parse.urlsplit(origin)
    return (parts.scheme in ("http", "https")
            and parts.netloc.lower() == request.headers.get("host", "").lower())


def local_path(target: str) -> bool:
    """Whether ``target`` is a path of this dashboard as a browser reads a Location: one
    "/" then neither "/" nor "\\" (else "//host" or "/\\host" is another site), and no
    control character nor backslash anywhere (URL parsers drop tabs and newlines, so
    "/\t/host" would become "//host")."""
    return (target.startswith("/") and target[1:2] not in ("/", "\\")
            and not any(c < " " or c in "\x7f\\" for c in target))


def safe_next(target: str | None, default: str) -> str:
    """A path of this dashboard to go back to (never another site: no //host, no scheme)."""
    return target if target is not None and local_path(target) else default


def without_flash(path: str) -> str:
    """``path`` (a safe_next) without its ?did=: where a page refreshes to, so that a
    flash is shown once."""
    base, _sep, query = path.partition("#")[0].partition("?")
    pairs = [(k, v) for k, v in urllib.parse.parse_qsl(query, keep_blank_values=True) if k != "did"]
    location = f"{base}?{urllib.parse.urlencode(pairs)}" if pairs else base
    return location if local_path(location) else "/"


def with_flash(path: str, flash: str) -> str:
    """``path`` (a safe_next) with ?did=flash: built from the checked text itself, never
    re-parsed into another (its fragment dropped, its query kept but for `did`)."""
    base, _sep, query = path.partition("#")[0].partition("?")
    pairs = [(k, v) for k, v in urllib.parse.parse_qsl(query) if k != "did"]
    pairs.append(("did", flash))
    location = f"{base}?{urllib.parse.urlencode(pairs)}"
    return location if local_path(location) else f"/?{urllib.parse.urlencode([('did', flash)])}"


# --- the Host check -----------------------------------------------------------------

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")


def split_host(value: str) -> tuple[str, int | None]:
    """A Host header (or an --allowed-host) as (host, port): the host lowercase, an IP
    address in its usual spelling ("[::1]" for IPv6, in brackets), the port None when
    not given. ValueError when it is not HOST or HOST:PORT."""
    value = value.strip().lower()
    if value.startswith("["):
        inside, sep, rest = value[1:].partition("]")
        if not sep:
            raise ValueError(f"{value[:100]!r}: an IPv6 address in brackets lacks its ]")
        try:
            host = f"[{ipaddress.IPv6Address(inside).compressed}]"
        except ValueError:
            raise ValueError(f"{value[:100]!r}: not an IPv6 address in brackets") from None
    else:
        host, sep, rest = value.partition(":")
        rest = sep + rest
        if not host or not all(c.isascii() and (c.isalnum() or c in ".-_") for c in host):
            raise ValueError(f"{value[:100]!r}: not a host name or an IP address")
        with contextlib.suppress(ValueError):
            host = str(ipaddress.IPv4Address(host))
    if rest and not (rest[0] == ":" and rest[1:].isascii() and rest[1:].isdigit()
                     and 0 < int(rest[1:]) <= 65535):
        raise ValueError(f"{value[:100]!r}: not HOST or HOST:PORT")
    return host, int(rest[1:]) if rest else None


def is_ip(host: str) -> bool:
    """Whether a host of split_host is an IP address."""
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


def is_wildcard(bound: str) -> bool:
    """Whether a listening address is every address of the machine (0.0.0.0, ::)."""
    return bound != "localhost" and ipaddress.ip_address(bound).is_unspecified


@dataclass(frozen=True)
class Hosts:
    """The names this dashboard answers to (docs/dashboard.md, "Which hosts"): the
    address it listens on, with its port; bound to loopback, also localhost, 127.0.0.1
    and [::1]; bound to every address (0.0.0.0, ::), any IP address and localhost;
    always the names given by --allowed-host ("NAME": any port, "NAME:PORT": that one)."""

    bound: str  # the listening address as split_host spells it
    port: int  # the listening port
    wildcard: bool  # bound to every address
    loopback: bool  # bound to a loopback address
    names: frozenset[tuple[str, int | None]] = frozenset()

    @staticmethod
    def of(bound: str, port: int, allowed: Sequence[str] = ()) -> Hosts:
        """For the listening address ``bound`` (an IP address or localhost, as
        config.parse_address gives it). ValueError for an allowed name that is not
        HOST or HOST:PORT."""
        return Hosts(split_host(f"[{bound}]" if ":" in bound else bound)[0], port,
                     is_wildcard(bound), config.is_loopback(bound),
                     frozenset(split_host(name) for name in allowed))

    def allows(self, header: str) -> bool:
        """Whether a request with this Host header is for this dashboard."""
        try:
            host, port = split_host(header)
        except ValueError:
            return False
        if (host, None) in self.names or (host, port) in self.names:
            return True
        if (port if port is not None else 80) != self.port:
            return False
        if host == self.bound:
            return True
        if self.wildcard:
            return is_ip(host) or host == "localhost"
        return self.loopback and host in LOOPBACK_NAMES


MISDIRECTED = ("421 Misdirected Request: this dashboard does not answer to this Host. "
               "Open it by its own address, or start it with --allowed-host NAME "
               "(docs/dashboard.md, \"Which hosts\").\n")


class SecurityHeaders:
    """ASGI middleware: every response gets SECURITY_HEADERS (those it does not set
    itself), whoever wrote it: a page, a redirect, the 404 or 405 of the router, the
    421 of HostCheck."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Any) -> None:
            if message["type"] == "http.response.start":
                given = {k.lower() for k, _v in message.get("headers", [])}
                message["headers"] = [*message.get("headers", []), *(
                    (k.encode(), v.encode()) for k, v in SECURITY_HEADERS.items()
                    if k.encode() not in given)]
            await send(message)

        await self.app(scope, receive, with_headers)


def internal_error(request: Request, exc: Exception) -> Response:
    """The 500 of an exception no handler expected: nothing of it shown (the server
    logs it), the security headers set (Starlette answers it outside any middleware)."""
    return PlainTextResponse("500 Internal Server Error\n", 500, headers=SECURITY_HEADERS)


class HostCheck:
    """ASGI middleware: a request whose Host is not allowed gets 421 and nothing else."""

    def __init__(self, app: ASGIApp, hosts: Hosts) -> None:
        self.app = app
        self.hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":  # (the dashboard has no websocket, and no lifespan)
            given = [v.decode("latin-1") for k, v in scope["headers"] if k == b"host"]
            if len(given) != 1 or not self.hosts.allows(given[0]):
                await PlainTextResponse(MISDIRECTED, 421)(scope, receive, send)
                return
        await self.app(scope, receive, send)


# --- the database -------------------------------------------------------------------

@dataclass(frozen=True)
class Database:
    """A connection per request: a dashboard is looked at, not hammered. Prepared
    statements off, no session state: it works through PgBouncer in transaction mode."""

    dsn: str
    minutes: MinuteCounts = field(default_factory=MinuteCounts)

    @contextlib.contextmanager
    def connect(self) -> Iterator[psycopg.Connection[Any]]:
        kwargs: dict[str, Any] = {"autocommit": True, "connect_timeout": 10,
                                  "prepare_threshold": None}
        if "application_name" not in psycopg.conninfo.conninfo_to_dict(self.dsn):
            kwargs["application_name"] = "brooq dashboard"
        with psycopg.connect(self.dsn, **kwargs) as conn:
            yield conn

    def overview(self) -> tuple[list[TopicStats], dict[str, list[tuple[int, int]]]]:
        """The topics, and each topic's (done, dead) per minute, oldest minute first."""
        with self.connect() as conn:
            stats = producer.topic_stats(conn)
            series = self.minutes.read(conn, [s.topic for s in stats])
        return stats, series

    def in_flight(self) -> list[InFlight]:
        with self.connect() as conn:
            return conn.cursor(row_factory=class_row(InFlight)).execute(
                tool_queries.DASHBOARD_IN_FLIGHT, [LIST_LIMIT]).fetchall()

    @staticmethod
    def topic_names(conn: psycopg.Connection[Any]) -> list[str]:
        try:
            return [r[0] for r in conn.execute(tool_queries.DASHBOARD_TOPIC_NAMES)]
        except psycopg.errors.InsufficientPrivilege:  # a read-only role granted before brooq.topics
            return [s.topic for s in producer.topic_stats(conn)]

    def browse(self, filters: Filters, after: str | None, page: int = listing.PAGE
               ) -> tuple[list[ListedJob], listing.Page, list[str]]:
        """A page of the jobs ``filters`` shows, after the cursor ``after``
        (brooq.tools.dashboard_browse): the jobs, the page's cursors, the topics' names."""
        with self.connect() as conn:
            topics = self.topic_names(conn)
            plan = listing.plan(filters, [filters.topic] if filters.topic is not None else topics,
                               after, page)
            rows = conn.cursor(row_factory=class_row(listing.Scanned)).execute(
                plan.order.query, plan.params).fetchall()
            found = listing.merge(plan, rows)
            shown = {j.id: j for j in conn.cursor(row_factory=class_row(ListedJob)).execute(
                tool_queries.DASHBOARD_BROWSE_SHOW, {"ids": found.ids})}
        return [shown[i] for i in found.ids if i in shown], found, topics

    def bulk_selection(self, filters: Filters) -> listing.Page:
        """The jobs a bulk action on ``filters`` touches: the first BULK_MAX of the list,
        read within the list's budget (next is not None: more may match)."""
        with self.connect() as conn:
            topics = self.topic_names(conn)
            plan = listing.plan(filters, [filters.topic] if filters.topic is not None else topics,
                               None, listing.BULK_MAX)
            rows = conn.cursor(row_factory=class_row(listing.Scanned)).execute(
                plan.order.query, plan.params).fetchall()
        return listing.merge(plan, rows)

    def bulk(self, action: str, filters: Filters) -> int:
        """Cancel or re-drive (needs brooq_admin) the jobs of bulk_selection, each by
        brooq.cancel or brooq.retry: how many changed."""
        ids = self.bulk_selection(filters).ids
        with self.connect() as conn, mapped(ADMIN, conn):
            query = (tool_queries.DASHBOARD_BULK_CANCEL if action == "cancel"
                     else tool_queries.DASHBOARD_BULK_RETRY)
            row = conn.execute(query, {"ids": ids}).fetchone()
        return int(row[0]) if row else 0

    def find(self, text: str) -> list[JobLine]:
        """The job whose id is ``text``, and the jobs whose idempotency key it is."""
        # ASCII digits only: str.isdigit also takes "\u00b2" (which int() refuses) and
        # other scripts' digits: such a text is a key
        job_id = int(text) if text.isascii() and text.isdigit() and int(text) < 2**63 else None
        with self.connect() as conn:
            topics = self.topic_names(conn)
            return conn.cursor(row_factory=class_row(JobLine)).execute(
                tool_queries.DASHBOARD_FIND,
                {"id": job_id, "topics": topics, "key": text, "limit": LIST_LIMIT}).fetchall()

    def job(self, job_id: int) -> JobView | None:
        with self.connect() as conn:
            job = conn.cursor(row_factory=class_row(JobView)).execute(
                tool_queries.DASHBOARD_JOB, {"id": job_id, "shown": html.MAX_SHOWN}).fetchone()
            if job is None:
                return None
            try:  # ids and states only, bounded (tool_queries.DASHBOARD_JOB_PARENTS)
                parents = conn.execute(tool_queries.DASHBOARD_JOB_PARENTS,
                                       {"id": job_id, "limit": html.MAX_PARENTS}).fetchall()
                children = conn.execute(tool_queries.DASHBOARD_JOB_CHILDREN,
                                        {"id": job_id, "limit": html.MAX_CHILDREN + 1}).fetchall()
                tree = conn.cursor(row_factory=class_row(TreeNode)).execute(
                    tool_queries.DASHBOARD_JOB_TREE,
                    {"id": job_id, "depth": html.TREE_DEPTH, "fan": html.TREE_FAN,
                     "nodes": html.TREE_NODES}).fetchall() if parents or children else []
            except psycopg.errors.InsufficientPrivilege:  # a read-only role granted before
                return job  # workflows: neither shown
            try:
                steps = conn.cursor(row_factory=class_row(StepLine)).execute(
                    tool_queries.DASHBOARD_JOB_STEPS,
                    {"id": job_id, "shown": html.MAX_SHOWN, "limit": html.MAX_STEPS + 1}).fetchall()
            except psycopg.errors.InsufficientPrivilege:  # a role granted before durable steps
                steps = []
            return job._replace(steps=tuple(steps), parents=tuple((p[0], p[1]) for p in parents),
                                parents_total=parents[0][2] if parents else 0,
                                children=tuple((c[0], c[1]) for c in children),
                                tree=tuple(tree))

    def act(self, action: str, target: int | str) -> bool:
        """Run an action (needs brooq_admin): whether it changed anything."""
        with self.connect() as conn:
            if action == "cancel":
                return producer.cancel(conn, int(target))
            if action == "retry-dead":  # the topic's dead jobs, oldest first, 1000 at most
                return admin.retry_dead(conn, str(target)) > 0
            if action == "retry":  # the job alone: its canceled children are not re-armed
                return admin.retry(conn, int(target))
            with mapped(ADMIN, conn):
                query = {"pause": queries.PAUSE_TOPIC,
                         "resume": queries.RESUME_TOPIC}[action]
                row = conn.execute(query, [target]).fetchone()
            return bool(row and row[0])

    def ping(self) -> None:
        with self.connect() as conn:
            conn.execute(tool_queries.DASHBOARD_PING)


# --- the application ----------------------------------------------------------------

Handler: TypeAlias = "Callable[[Request], Awaitable[Response]]"

SECURITY_HEADERS = {
    # No script at all; styles inline; forms post only here; never framed.
    "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; "
                               "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",  # no-referrer would make Chrome send "Origin: null"
    "cache-control": "no-store",
}

def create_app(dsn: str, token: str | None, hosts: Hosts) -> Starlette:
    """The dashboard as an ASGI application (uvicorn serves it, see serve), answering
    the ``hosts`` only."""
    if Starlette is None:
        raise BrooqError(_("cli.dashboard_needs", hint=HINT))
    db = Database(dsn)
    auth = Auth(token)

    def respond(request: Request, body: str, status: int = 200) -> HTMLResponse:
        return HTMLResponse(body, status_code=status, headers=SECURITY_HEADERS)

    def view(request: Request, found: str = "") -> html.View:
        session = auth.session(request)
        here = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        return html.View(
            admin=session is not None, csrf=auth.csrf(session) if session else "",
            can_log_in=token is not None, path=request.url.path, here=here,
            flash=flash_text(request.query_params.get("did", ""), request.query_params.get("n", "")),
            again=without_flash(safe_next(here, "/")), found=found)

    def failed(request: Request, exc: Exception, acting: bool = False) -> HTMLResponse:
        if isinstance(exc, PermissionDenied | psycopg.errors.InsufficientPrivilege):
            why = _("dash.actions_need_admin") if acting else _("dash.reading_needs_grants")
            return respond(request, html.message(
                view(request), _("dash.refused_by_db"),
                _("dash.role_may_not", why=why, error=one_line(exc, 200))), 403)
        return respond(request, html.message(
            view(request), _("dash.db_error"), one_line(exc, 300)), 503)

    async def topics(request: Request) -> Response:
        try:
            stats, series = await run_in_threadpool(db.overview)
        except (psycopg.Error, BrooqError) as exc:
            return failed(request, exc)
        return respond(request, html.topics(view(request), stats, series))

    async def in_flight(request: Request) -> Response:
        try:
            rows = await run_in_threadpool(db.in_flight)
        except (psycopg.Error, BrooqError) as exc:
            return failed(request, exc)
        return respond(request, html.in_flight(view(request), rows))

    def no_topic(request: Request, topic: str) -> HTMLResponse:
        return respond(request, html.message(
            view(request), _("dash.topic_not_found", topic=topic[:100]), _("dash.no_such_topic")), 404)

    def bad_filter(request: Request, exc: FilterError) -> HTMLResponse:
        return respond(request, html.message(view(request), _("dash.bad_filter_title"),
                                             _(exc.key, **exc.fields)), 400)

    async def jobs(request: Request) -> Response:
        after = request.query_params.get("after") or None
        try:
            filters = Filters.of(dict(request.query_params))
            rows, found, names = await run_in_threadpool(db.browse, filters, after)
        except FilterError as exc:
            return bad_filter(request, exc)
        except (psycopg.Error, BrooqError) as exc:
            return failed(request, exc)
        if filters.topic is not None and filters.topic not in names and not rows:
            return no_topic(request, filters.topic)
        return respond(request, html.jobs(view(request), rows, names, filters, found, after))

    async def bulk_page(request: Request) -> Response:
        """What a bulk action would touch, and the form that runs it (admin only)."""
        name = request.query_params.get("action", "")
        if token is None:
            return refused(request, _("dash.read_only_no_token"))
        if auth.session(request) is None:
            return refused(request, _("dash.log_in_first"))
        try:
            filters = Filters.of(dict(request.query_params))
            if not listing.can(name, filters.state):
                raise FilterError("dash.bulk_not_for_state")
            found = await run_in_threadpool(db.bulk_selection, filters)
        except FilterError as exc:
            return bad_filter(request, exc)
        except (psycopg.Error, BrooqError) as exc:
            return failed(request, exc)
        return respond(request, html.bulk(view(request), name, filters, found))

    def bulk(name: str) -> Handler:
        async def endpoint(request: Request) -> Response:
            fields = await form(request)
            if (refusal := guard(request, fields)) is not None:
                return refusal
            try:
                filters = Filters.of(fields)
                if not listing.can(name, filters.state):
                    raise FilterError("dash.bulk_not_for_state")
                changed = await run_in_threadpool(db.bulk, name, filters)
            except FilterError as exc:
                return bad_filter(request, exc)
            except (psycopg.Error, BrooqError) as exc:
                return failed(request, exc, acting=True)
            done = "bulk-canceled" if name == "cancel" else "bulk-retried"
            query = urllib.parse.urlencode([*filters.query(), ("did", done), ("n", str(changed))])
            return RedirectResponse(f"/jobs?{query}", status_code=303)
        return endpoint

    async def job(request: Request) -> Response:
        job_id: int = request.path_params["job_id"]
        try:
            fate = await run_in_threadpool(db.job, job_id)
        except (psycopg.Error, BrooqError) as exc:
            return failed(request, exc)
        if fate is None:
            return respond(request, html.message(
                view(request), _("dash.job_not_found", id=job_id), _("dash.no_such_job")), 404)
        return respond(request, html.job(view(request), fate))

    async def find(request: Request) -> Response:
        text = request.query_params.get("q", "").strip()
        if not text:
            return RedirectResponse("/jobs", status_code=303)
        if len(text) > html.MAX_FIND:
            return respond(request, html.message(view(request), _("dash.find_too_long_title"),
                                                 _("dash.find_too_long", limit=html.MAX_FIND)), 400)
        try:
            rows = await run_in_threadpool(db.find, text)
        except (psycopg.Error, BrooqError) as exc:
            return failed(request, exc)
        if len(rows) == 1:
            return RedirectResponse(f"/jobs/{rows[0].id}", status_code=303)
        if not rows:
            return respond(request, html.message(view(request, text), _("dash.nothing_found_title", text=text),
                                                 _("dash.nothing_found")), 404)
        return respond(request, html.found(view(request, text), rows, text))

    async def form(request: Request) -> dict[str, str]:
        body = await request.body()
        if len(body) > MAX_FORM:
            return {}
        return {k: v[0] for k, v in urllib.parse.parse_qs(body.decode("utf-8", "replace")).items()}

    def refused(request: Request, why: str) -> HTMLResponse:
        return respond(request, html.message(view(request), _("dash.refused"), why), 403)

    def guard(request: Request, fields: dict[str, str]) -> HTMLResponse | None:
        """The refusal of an action without the token, or from a form not this
        dashboard's (None: it may run)."""
        if token is None:
            return refused(request, _("dash.read_only_no_token"))
        if not auth.bearer(request):
            session = auth.session(request)
            if session is None:
                return refused(request, _("dash.log_in_first"))
            if not same_origin(request) or not hmac.compare_digest(
                    fields.get("csrf", "").encode(), auth.csrf(session).encode()):
                return refused(request, _("dash.bad_form"))
        return None

    def action(name: str, target_of: Callable[[Request], int | str],
               back: Callable[[int | str], str]) -> Handler:
        async def endpoint(request: Request) -> Response:
            fields = await form(request)
            if (refusal := guard(request, fields)) is not None:
                return refusal
            target = target_of(request)
            try:
                changed = await run_in_threadpool(db.act, name, target)
            except UnknownTopic:  # 42704: pause or resume of a topic never declared
                return no_topic(request, str(target))
            except (psycopg.Error, BrooqError) as exc:
                return failed(request, exc, acting=True)
            done = {"cancel": "canceled", "retry": "retried", "pause": "paused",
                    "resume": "resumed", "retry-dead": "retried-dead"}[name]
            flash = done if changed else f"not-{done}"
            to = safe_next(fields.get("next"), back(target))
            return RedirectResponse(with_flash(to, flash), status_code=303)
        return endpoint

    def job_target(request: Request) -> int:
        job_id: int = request.path_params["job_id"]
        return job_id

    def topic_target(request: Request) -> str:
        name: str = request.path_params["topic"]
        return name

    async def login_page(request: Request) -> Response:
        return respond(request, html.login(view(request), "", request.query_params.get("next")))

    async def login(request: Request) -> Response:
        fields = await form(request)
        if token is None:
            return refused(request, _("dash.read_only_login"))
        if not same_origin(request):
            return refused(request, _("dash.foreign_form"))
        if not auth.matches(fields.get("token", "")):
            return respond(request, html.login(view(request), _("dash.wrong_token"),
                                               fields.get("next")), 403)
        to = with_flash(safe_next(fields.get("next"), "/"), "login")
        response = RedirectResponse(to, status_code=303)
        response.set_cookie(COOKIE, auth.new_session(time.time()), max_age=SESSION_SECONDS,
                            path="/", httponly=True, samesite="strict",
                            secure=request.url.scheme == "https")
        return response

    async def logout(request: Request) -> Response:
        if not same_origin(request):
            return refused(request, _("dash.foreign_form"))
        response = RedirectResponse(with_flash("/", "logout"), status_code=303)
        response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict")
        return response

    async def healthz(request: Request) -> Response:
        try:
            await run_in_threadpool(db.ping)
        except psycopg.Error as exc:
            return PlainTextResponse(f"database unreachable: {one_line(exc, 200)}\n", 503)
        return PlainTextResponse("ok\n")

    routes = [
        Route("/", topics),
        Route("/in-flight", in_flight),
        Route("/jobs", jobs),
        Route("/jobs/bulk", bulk_page),
        Route("/jobs/bulk/cancel", bulk("cancel"), methods=["POST"]),
        Route("/jobs/bulk/retry", bulk("retry"), methods=["POST"]),
        Route("/jobs/{job_id:int}", job),
        Route("/jobs/{job_id:int}/cancel", action("cancel", job_target, lambda i: f"/jobs/{i}"),
              methods=["POST"]),
        Route("/jobs/{job_id:int}/retry", action("retry", job_target, lambda i: f"/jobs/{i}"),
              methods=["POST"]),
        Route("/topics/{topic}/pause", action("pause", topic_target, lambda _: "/"),
              methods=["POST"]),
        Route("/topics/{topic}/resume", action("resume", topic_target, lambda _: "/"),
              methods=["POST"]),
        Route("/topics/{topic}/retry-dead",
              action("retry-dead", topic_target,
                     lambda name: f"/jobs?{urllib.parse.urlencode({'topic': name, 'state': 'dead'})}"),
              methods=["POST"]),
        Route("/find", find),
        Route("/login", login_page, methods=["GET"]),
        Route("/login", login, methods=["POST"]),
        Route("/logout", logout, methods=["POST"]),
        Route("/healthz", healthz),
    ]
    return Starlette(routes=routes, exception_handlers={Exception: internal_error},
                     middleware=[Middleware(SecurityHeaders), Middleware(HostCheck, hosts=hosts)])


# --- serving ------------------------------------------------------------------------

def listen(host: str, port: int) -> socket.socket:
    """A listening socket on host:port (port 0: a free one)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    return socket.create_server((host, port), family=family, reuse_port=False)


def serve(dsn: str, token: str | None, host: str, port: int, allowed: Sequence[str] = (),
          announce: Callable[[str], None] = lambda line: print(line, file=sys.stderr, flush=True)
          ) -> None:
    """Serve the dashboard until SIGINT or SIGTERM, answering the Host names of
    Hosts.of(host, port, allowed) only (ValueError: an allowed name is not HOST[:PORT])."""
    import uvicorn

    Hosts.of(host, port, allowed)  # a wrong name fails before listening
    sock = listen(host, port)
    bound = sock.getsockname()[1]
    app = create_app(dsn, token, Hosts.of(host, bound, allowed))
    shown = f"[{host}]" if ":" in host else host
    mode = _("dash.mode_actions") if token else _("dash.mode_read_only")
    announce(_("dash.serving", host=shown, port=bound, mode=mode))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False,
                                           lifespan="off", server_header=False))
    # SIGTERM or SIGINT is a clean stop: uvicorn takes both while it serves, and gives
    # back the handlers it found when it stops, raising each signal it caught again: here
    # they ask it to stop (a signal before it took them too), so the command exits 0,
    # not 143 as killed by the signal.
    with stop_signals(lambda: setattr(server, "should_exit", True)):
        server.run(sockets=[sock])
