"""The dashboard's pages as HTML text (brooq.tools.dashboard serves them).

Every value from the database passes through ``esc`` (html.escape, quotes too)
before it is put in a page; nothing else is interpolated but this module's own
literals and numbers, and the texts of the message catalogue, escaped too (``t``). No script: the chart is inline SVG, the actions are forms.
"""

from __future__ import annotations

import html
import json
import urllib.parse
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from brooq.messages import _, _n, language_tag, template
from brooq.rows import TopicStats
from brooq.states import CANCELABLE, CLAIMABLE, REDRIVABLE, TERMINAL
from brooq.tools import dashboard_browse as browse
from brooq.tools.text import format_duration

MAX_SHOWN = 65536  # characters of a payload, result or error on a page
MAX_CHILDREN = 50  # children linked on a job's page; more are summed up as "..."
MAX_PARENTS = 50  # parents linked on a job's page; more are counted
MAX_STEPS = 50  # durable steps listed on a job's page, the first finished; more are said

TREE_DEPTH = 3  # levels of a job's workflow tree shown above it and below it
TREE_FAN = 10  # parents or children of each node of the tree, the lowest ids
TREE_NODES = 100  # nodes of the tree shown above the job, and below it


class InFlight(NamedTuple):
    """One row of tool_queries.DASHBOARD_IN_FLIGHT."""

    id: int
    topic: str
    attempts: int
    max_attempts: int
    locked_by: str
    claimed_at: Any
    running_for: Any
    lease_left: Any
    expired: bool
    progress: str | None  # the reported progress as JSON text, its first 200 characters


class JobLine(NamedTuple):
    """One row of tool_queries.DASHBOARD_FIND: a job the search box found."""

    id: int
    topic: str
    state: str
    attempts: int
    max_attempts: int
    updated_at: datetime
    last_error: str | None


class ListedJob(NamedTuple):
    """One row of tool_queries.DASHBOARD_BROWSE_SHOW: a job of the jobs page (its
    payload's first 200 characters as stored)."""

    id: int
    topic: str
    state: str
    attempts: int
    max_attempts: int
    updated_at: datetime
    last_error: str | None
    priority: int
    key: str | None
    available_at: datetime
    created_at: datetime
    payload: str


class TreeNode(NamedTuple):
    """One row of tool_queries.DASHBOARD_JOB_TREE: a job of a workflow's tree, above
    (way "up": a parent of ``via``) or below (way "down": a child of ``via``)."""

    way: str
    id: int
    state: str
    via: int
    depth: int


class StepLine(NamedTuple):
    """One row of tool_queries.DASHBOARD_JOB_STEPS: a durable step of a job, its result
    (JSON text) cut at MAX_SHOWN characters with its whole length (None: no result)."""

    name: str
    kind: str
    result: str | None
    result_length: int | None
    attempt: int | None
    at: datetime


class JobView(NamedTuple):
    """One row of tool_queries.DASHBOARD_JOB: a job's page. Payload, result and progress are
    the stored JSON text, cut at MAX_SHOWN characters, each with its whole
    length (None: no value)."""

    id: int
    topic: str
    state: str
    attempts: int
    max_attempts: int
    priority: int
    last_error: str | None
    key: str | None
    available_at: datetime
    created_at: datetime
    updated_at: datetime
    locked_by: str | None
    locked_until: datetime | None
    payload: str
    payload_length: int
    result: str | None
    result_length: int | None
    progress: str | None
    progress_length: int | None
    parents: tuple[tuple[int, str], ...] = ()  # (id, state) of the first MAX_PARENTS parents (workflows)
    parents_total: int = 0  # how many parents it has
    children: tuple[tuple[int, str], ...] = ()  # (id, state) of the first children, MAX_CHILDREN + 1
    tree: tuple[TreeNode, ...] = ()  # its workflow's tree, bounded (TREE_*)
    steps: tuple[StepLine, ...] = ()  # its durable steps, the first MAX_STEPS + 1


@dataclass(frozen=True)
class View:
    """What every page needs to know about its request."""

    admin: bool  # logged in: the action forms are shown
    csrf: str  # the CSRF field of the forms ("" when not admin)
    can_log_in: bool  # the dashboard has a token
    path: str  # the page's path (the active tab)
    here: str  # path and query: where an action comes back to
    flash: str = ""
    again: str = ""  # where the page refreshes to (here without its flash)
    found: str = ""  # the search box's text


def esc(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def q(value: str) -> str:
    """A value for a URL's path or query."""
    return urllib.parse.quote(value, safe="")


def when(value: datetime | None) -> str:
    if value is None:
        return "-"
    shown = value.isoformat(sep=" ", timespec="seconds")
    return f'<time datetime="{esc(value.isoformat())}">{esc(shown)}</time>'


def age(value: timedelta | None) -> str:
    return esc(format_duration(value))


def pretty(stored: str, length: int) -> str:
    """A jsonb value read as text (at most MAX_SHOWN characters of its ``length``):
    indented when whole and Python can decode it, else as stored, cut short with a note.
    Decoding fails on what jsonb holds and Python's json refuses: nesting past the
    recursion limit, an integer of thousands of digits."""
    text = stored
    if length <= MAX_SHOWN:
        try:
            text = json.dumps(json.loads(stored), indent=2, ensure_ascii=False, sort_keys=True)
        except (ValueError, RecursionError):
            pass
        length = len(text)
    if length > MAX_SHOWN:
        text = text[:MAX_SHOWN] + "\n" + _n("dash.more_characters", length - MAX_SHOWN)
    return f"<pre>{esc(text)}</pre>"


def badge(state: str, label: str | None = None) -> str:
    """A state as a badge: a job's state as is (data), or a label for a word of ours."""
    return f'<span class="state s-{esc(state)}">{esc(state if label is None else label)}</span>'


class Html(str):
    """A piece of HTML already safe, for a field of ``t``."""


def t(key: str, **fields: Any) -> str:
    """A catalogue text (brooq.messages) as HTML: the text escaped, its fields escaped
    too, but the ``Html`` ones put as they are."""
    return esc(template(key)).format(**{k: v if isinstance(v, Html) else esc(v)
                                        for k, v in fields.items()})


def headings(*keys: str) -> str:
    """A table's heading row, each heading a catalogue text."""
    return "<tr>" + "".join(f"<th>{t(k)}</th>" if k else "<th></th>" for k in keys) + "</tr>"


STYLE = """
:root { --fg:#1d232b; --muted:#66707c; --line:#dde2e8; --bg:#f6f7f9; --card:#fff;
        --accent:#2458b3; --done:#2f9e5b; --dead:#cf3b3b; --warn:#c27b00; }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif;
       color:var(--fg); background:var(--bg); }
header { display:flex; align-items:center; gap:24px; padding:10px 24px; background:#16202c; color:#fff; }
header .brand { font-weight:700; font-size:16px; letter-spacing:.5px; }
header nav a { color:#c7d3e3; text-decoration:none; margin-right:16px; padding:4px 0; }
header nav a.on { color:#fff; border-bottom:2px solid #7fb0ff; }
header .who { margin-left:auto; display:flex; gap:10px; align-items:center; color:#c7d3e3; }
header .who a, header .who button { color:#fff; }
main { padding:20px 24px; max-width:1400px; }
h1 { font-size:20px; margin:0 0 14px; }
h2 { font-size:15px; margin:22px 0 8px; }
table { border-collapse:collapse; width:100%; background:var(--card); border:1px solid var(--line); }
th, td { text-align:left; padding:7px 10px; border-bottom:1px solid var(--line); vertical-align:top; }
th { background:#eef1f5; font-weight:600; font-size:12px; color:#3c4652; text-transform:uppercase; letter-spacing:.3px; }
td.n { text-align:right; font-variant-numeric:tabular-nums; }
td.err { max-width:520px; color:#6b1f1f; font-family:ui-monospace, monospace; font-size:12px; white-space:pre-wrap; word-break:break-word; }
a { color:var(--accent); }
.muted { color:var(--muted); }
.flash { background:#e7f4ea; border:1px solid #b5dcbf; padding:8px 12px; margin-bottom:14px; }
.state { display:inline-block; padding:1px 8px; border-radius:9px; font-size:12px; background:#e3e7ec; }
.s-done { background:#dff3e6; color:#1d6b3c; } .s-dead { background:#fbe1e1; color:#9b1c1c; }
.s-failed { background:#fdf0d9; color:#8a5a00; } .s-processing { background:#e0ebfd; color:#1e4c9a; }
.s-canceled { background:#ececec; color:#555; } .s-paused { background:#fdf0d9; color:#8a5a00; }
.s-running { background:#dff3e6; color:#1d6b3c; } .s-expired { background:#fbe1e1; color:#9b1c1c; }
form.inline { display:inline; margin:0; }
button { font:inherit; font-size:12px; padding:3px 10px; border:1px solid #9aa7b6; border-radius:4px; background:#fff; cursor:pointer; }
button.danger { border-color:#d99; color:#9b1c1c; }
button.go { border-color:#8bc2a0; color:#1d6b3c; }
header button { background:transparent; border-color:#56657a; }
dl { display:grid; grid-template-columns:160px 1fr; gap:6px 16px; background:var(--card);
     border:1px solid var(--line); padding:14px; margin:0; }
dt { color:var(--muted); } dd { margin:0; }
pre { margin:0; padding:10px; background:#f1f3f6; border:1px solid var(--line); overflow:auto; max-height:420px;
      font-size:12px; white-space:pre-wrap; word-break:break-word; }
.filters { display:flex; flex-wrap:wrap; gap:10px; align-items:center; margin-bottom:12px; }
.filters input { font:inherit; font-size:13px; padding:2px 6px; }
a.button { font-size:12px; padding:3px 10px; border:1px solid #d99; border-radius:4px; background:#fff;
           color:#9b1c1c; text-decoration:none; }
.pager a { margin-right:16px; }
#tree ul { margin:2px 0 2px 8px; padding-left:16px; border-left:1px solid var(--line); list-style:none; }
#tree h3 { font-size:13px; margin:8px 0 2px; color:var(--muted); }
.tree-self { font-weight:600; margin:6px 0; }
.actions { display:flex; gap:8px; margin:14px 0; }
svg.chart rect.done { fill:var(--done); } svg.chart rect.dead { fill:var(--dead); }
svg.chart line { stroke:var(--line); }
.login { max-width:420px; background:var(--card); border:1px solid var(--line); padding:18px; }
.login input { width:100%; padding:6px; font:inherit; margin:6px 0 12px; }
.error { color:#9b1c1c; }
header form.find { display:flex; gap:6px; }
header form.find input { font:inherit; font-size:13px; padding:3px 8px; width:220px; border:1px solid #56657a;
                         border-radius:4px; background:#223044; color:#fff; }
header form.find button { color:#fff; }
"""

REFRESH_SECONDS = 5  # the read pages reload themselves (no script: a meta refresh)
MAX_FIND = 200  # characters of a search: an id, or an idempotency key

TABS = (("/", "dash.tab.topics"), ("/in-flight", "dash.tab.in_flight"), ("/jobs", "dash.tab.jobs"))


def page(view: View, title: str, body: str, *, refresh: bool = False) -> str:
    """A whole page; ``refresh``: it reloads itself every REFRESH_SECONDS (a page of
    what the queue holds, not a form nor a refusal)."""
    nav = "".join(f'<a href="{href}"{" class=on" if _active(view.path, href) else ""}>{t(key)}</a>'
                  for href, key in TABS)
    if view.admin:
        who = (f'<span>{t("dash.admin")}</span><form class="inline" method="post" action="/logout">'
               f'<button type="submit" id="logout">{t("dash.log_out")}</button></form>')
    elif view.can_log_in:
        who = (f'<span>{t("dash.read_only")}</span>'
               f'<a id="login" href="/login?next={q(view.here)}">{t("dash.log_in")}</a>')
    else:
        who = f'<span title="{t("dash.no_token")}">{t("dash.read_only")}</span>'
    flash = f'<div class="flash" id="flash">{esc(view.flash)}</div>' if view.flash else ""
    again = (f'<meta http-equiv="refresh" content="{REFRESH_SECONDS}; url={esc(view.again)}">'
             if refresh and view.again else "")
    find = (f'<form class="find" method="get" action="/find" role="search">'
            f'<input type="search" name="q" id="find" maxlength="{MAX_FIND}" value="{esc(view.found)}" '
            f'placeholder="{t("dash.find_placeholder")}" aria-label="{t("dash.find_placeholder")}">'
            f'<button type="submit" id="find-go">{t("dash.find")}</button></form>')
    return (f'<!doctype html><html lang="{esc(language_tag())}"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">{again}'
            f"<title>{esc(title)} · brooq</title><style>{STYLE}</style></head><body>"
            f'<header><span class="brand">brooq</span><nav>{nav}</nav>{find}<div class="who">{who}</div></header>'
            f"<main>{flash}<h1>{esc(title)}</h1>{body}</main></body></html>")


def _active(path: str, href: str) -> bool:
    return path == href if href == "/" else path == href or (href == "/jobs" and path.startswith("/jobs"))


def action(view: View, path: str, label: str, kind: str = "", ident: str = "") -> str:
    """A POST form with one button (admin only)."""
    if not view.admin:
        return ""
    id_attr = f' id="{esc(ident)}"' if ident else ""
    return (f'<form class="inline" method="post" action="{esc(path)}">'
            f'<input type="hidden" name="csrf" value="{esc(view.csrf)}">'
            f'<input type="hidden" name="next" value="{esc(view.here)}">'
            f'<button type="submit" class="{kind}"{id_attr}>{esc(label)}</button></form>')


def chart(series: Sequence[tuple[int, int]], top: int) -> str:
    """Finished jobs per minute, oldest first: done (green) under dead (red), ``top`` the
    height of the chart."""
    width, height, bar = 10, 36, 8
    scale = height / max(top, 1)
    parts = [(f'<svg class="chart" width="{len(series) * width}" height="{height}" role="img" '
              f'aria-label="{t("dash.chart_label")}">'
              f'<line x1="0" y1="{height - 0.5}" x2="{len(series) * width}" y2="{height - 0.5}"/>')]
    for i, (done, dead) in enumerate(series):
        ago = len(series) - 1 - i
        label = _("dash.minutes_ago", minutes=ago) if ago else _("dash.this_minute")
        x = i * width
        h_done, h_dead = done * scale, dead * scale
        parts.append(f"<g><title>{t('dash.bar', when=label, done=done, dead=dead)}</title>"
                     f'<rect class="done" x="{x}" y="{height - h_done:.1f}" width="{bar}" height="{h_done:.1f}"/>'
                     f'<rect class="dead" x="{x}" y="{height - h_done - h_dead:.1f}" width="{bar}" '
                     f'height="{h_dead:.1f}"/></g>')
    parts.append("</svg>")
    return "".join(parts)


def topics(view: View, stats: Sequence[TopicStats], series: dict[str, list[tuple[int, int]]]) -> str:
    title = _("dash.tab.topics")
    if not stats:
        command = Html("<code>brooq declare-topic NAME</code>")
        return page(view, title, f'<p class="muted">{t("dash.no_topics", command=command)}</p>')
    rows = []
    for s in stats:
        minutes = series.get(s.topic, [])
        top = max((d + x for d, x in minutes), default=0)  # each topic to its own scale
        finished = sum(d + x for d, x in minutes)
        dead = sum(x for _d, x in minutes)
        state = badge("paused", _("dash.paused")) if s.paused else badge("running", _("dash.running"))
        toggle = (action(view, f"/topics/{q(s.topic)}/resume", _("dash.resume"), "go", f"resume-{s.topic}")
                  if s.paused else
                  action(view, f"/topics/{q(s.topic)}/pause", _("dash.pause"), "", f"pause-{s.topic}"))
        rows.append(
            f'<tr id="topic-{esc(s.topic)}"><td><a href="/jobs?topic={q(s.topic)}">{esc(s.topic)}</a></td>'
            f"<td>{state} {toggle}</td>"
            f'<td class="n">{s.ready}</td><td class="n">{s.scheduled}</td><td class="n">{s.failed}</td>'
            f'<td class="n">{s.processing}</td><td class="n">{s.expired}</td>'
            f'<td class="n">{age(s.oldest_ready_age)}</td>'
            f"<td>{chart(minutes, top)}</td>"
            f'<td class="n">{finished / max(len(minutes), 1):.1f}</td><td class="n">{dead}</td></tr>')
    head = headings("dash.col.topic", "dash.col.claims", "dash.col.ready", "dash.col.scheduled",
                    "dash.col.failed_to_retry", "dash.col.in_flight", "dash.col.lease_expired",
                    "dash.col.oldest_ready", "dash.col.finished_per_minute",
                    "dash.col.avg_per_minute", "dash.col.dead_15")
    note = f'<p class="muted">{t("dash.topics_note", seconds=REFRESH_SECONDS)}</p>'
    return page(view, title, f"<table>{head}{''.join(rows)}</table>{note}", refresh=True)


def in_flight(view: View, rows: Sequence[InFlight]) -> str:
    title = _("dash.tab.in_flight")
    if not rows:
        return page(view, title, f'<p class="muted">{t("dash.nothing_in_flight")}</p>', refresh=True)
    body = []
    for r in rows:
        lease = badge("expired", _("dash.expired")) if r.expired else age(r.lease_left)
        progress = esc(r.progress or "")
        body.append(f'<tr><td><a href="/jobs/{r.id}">{r.id}</a></td><td>{esc(r.topic)}</td>'
                    f'<td class="n">{r.attempts}/{r.max_attempts}</td><td>{esc(r.locked_by)}</td>'
                    f"<td>{when(r.claimed_at)}</td><td class=\"n\">{age(r.running_for)}</td>"
                    f'<td class="n">{lease}</td><td>{progress}</td>'
                    f"<td>{action(view, f'/jobs/{r.id}/cancel', _('dash.cancel'), 'danger')}</td></tr>")
    head = headings("dash.col.job", "dash.col.topic", "dash.col.attempt", "dash.col.held_by",
                    "dash.col.claimed", "dash.col.for", "dash.col.lease_left", "dash.col.progress", "")
    return page(view, title, f"<table>{head}{''.join(body)}</table>"
                             f'<p class="muted">{t("dash.in_flight_note")}</p>', refresh=True)


STATE_LABELS = {"": "dash.dead_and_failed", "scheduled": "dash.state.scheduled",
                "pending": "dash.state.pending_ready"}


def jobs(view: View, rows: Sequence[ListedJob], topic_names: Iterable[str], filters: browse.Filters,
         found: browse.Page, after: str | None) -> str:
    """The jobs page: the filters, a page of the jobs they show, the next page's link,
    the bulk actions (admin) and a note of how the list was read."""
    title = _("dash.tab.jobs")
    topic, state = filters.topic, filters.state
    options = [f'<option value="">{t("dash.every_topic")}</option>'] + [
        f'<option value="{esc(n)}"{" selected" if n == topic else ""}>{esc(n)}</option>'
        for n in topic_names]
    states = [f'<option value="{v}"{" selected" if v == state else ""}>'
              f'{t(STATE_LABELS[v]) if v in STATE_LABELS else esc(v)}</option>' for v in browse.STATES]
    limit = browse.MAX_FILTER
    filters_form = (
        f'<form class="filters" method="get" action="/jobs">'
        f'<label>{t("dash.filter.topic")} <select name="topic" id="topic">{"".join(options)}</select></label>'
        f'<label>{t("dash.filter.state")} <select name="state" id="state">{"".join(states)}</select></label>'
        f'<label>{t("dash.filter.key")} <input name="key" id="key" maxlength="{limit}" size="16" '
        f'value="{esc(filters.key or "")}"></label>'
        f'<label>{t("dash.filter.payload")} <input name="payload" id="payload" maxlength="{limit}" size="22" '
        f'placeholder="customer = 42" value="{esc(filters.payload or "")}"></label>'
        f'<button type="submit" id="filter">{t("dash.show")}</button></form>')
    query = filters.query()
    bulk = [f'<a class="button" id="bulk-{name}" href="/jobs/bulk?{esc(urllib.parse.urlencode([*query, ("action", name)]))}">'
            f'{t(label)}</a>'
            for name, label in (("cancel", "dash.bulk.cancel_these"), ("retry", "dash.bulk.retry_these"))
            if view.admin and rows and browse.can(name, state)]
    if topic is not None and any(j.state == "dead" for j in rows) and filters.key is None:
        bulk.append(action(view, f"/topics/{q(topic)}/retry-dead",
                           _("dash.redrive_all_dead", topic=topic), "go", "retry-dead"))
    actions = f'<p class="actions">{"".join(bulk)}</p>' if bulk else ""
    pager = []
    if after is not None:
        pager.append(f'<a id="first" href="/jobs?{esc(urllib.parse.urlencode(query))}">{t("dash.first_page")}</a>')
    if found.next is not None:
        pager.append(f'<a id="next" href="/jobs?{esc(urllib.parse.urlencode([*query, ("after", found.next)]))}">'
                     f'{t("dash.next_page")}</a>')
    notes = [t("dash.jobs_note_" + ("claim" if state in ("pending", "scheduled")
                                    else "done" if state == "done" else "newest"), page=browse.PAGE)]
    if found.partial:
        notes.append(f'<span id="partial">{t("dash.partial_page", scanned=browse.MAX_SCANNED)}</span>')
    foot = (f'<p class="pager">{" ".join(pager)}</p>' if pager else "") + \
        f'<p class="muted">{" ".join(notes)}</p>'
    if not rows:
        return page(view, title, filters_form + f'<p class="muted" id="no-match">{t("dash.no_job_matches")}</p>'
                    + foot)
    # no reload: a page to type filters into and to walk, page after page
    return page(view, title, filters_form + actions + listed_table(view, rows) + foot)


def listed_table(view: View, rows: Sequence[ListedJob]) -> str:
    body = []
    for j in rows:
        act = (action(view, f"/jobs/{j.id}/retry", _("dash.redrive"), "go") if j.state in REDRIVABLE
               else action(view, f"/jobs/{j.id}/cancel", _("dash.cancel"), "danger")
               if j.state in CANCELABLE else "")
        body.append(f'<tr id="job-{j.id}"><td><a href="/jobs/{j.id}">{j.id}</a></td><td>{esc(j.topic)}</td>'
                    f'<td>{badge(j.state)}</td><td class="n">{j.attempts}/{j.max_attempts}</td>'
                    f'<td class="n">{j.priority}</td><td>{esc(j.key or "-")}</td>'
                    f'<td class="err">{esc(j.payload)}</td>'
                    f"<td>{when(j.available_at if j.state in CLAIMABLE else j.updated_at)}</td>"
                    f'<td class="err">{esc((j.last_error or "-")[:400])}</td><td>{act}</td></tr>')
    head = headings("dash.col.job", "dash.col.topic", "dash.col.state", "dash.col.attempts",
                    "dash.col.priority", "dash.col.key", "dash.col.payload", "dash.col.since",
                    "dash.col.last_error", "")
    return f"<table>{head}{''.join(body)}</table>"


def bulk(view: View, name: str, filters: browse.Filters, found: browse.Page) -> str:
    """The confirmation of a bulk cancel or re-drive: how many jobs, the first of them,
    the form that runs it (admin only: the endpoint asks for a session)."""
    count = len(found.ids)
    how_many = (_n("dash.bulk.at_least", count, cap=browse.BULK_MAX) if found.next is not None
                else _n("dash.bulk.exactly", count))
    shown = " ".join(f'<a href="/jobs/{i}">{i}</a>' for i in found.ids[:20]) + (" ..." if count > 20 else "")
    summary = "".join(f"<dt>{t('dash.filter.' + k)}</dt><dd>{esc(v)}</dd>" for k, v in filters.query())
    hidden = "".join(f'<input type="hidden" name="{k}" value="{esc(v)}">' for k, v in filters.query())
    back = f'/jobs?{urllib.parse.urlencode(filters.query())}'
    form = (f'<form method="post" action="/jobs/bulk/{esc(name)}">'
            f'<input type="hidden" name="csrf" value="{esc(view.csrf)}">{hidden}'
            f'<button type="submit" class="danger" id="confirm">'
            f'{t("dash.bulk.confirm_" + name, count=count)}</button> '
            f'<a id="cancel-bulk" href="{esc(back)}">{t("dash.bulk.back")}</a></form>' if view.admin and count else
            f'<p><a href="{esc(back)}">{t("dash.bulk.back")}</a></p>')
    body = (f'<dl id="bulk-filters">{summary}</dl>'
            f'<p id="bulk-count">{esc(how_many)}</p><p class="muted">{shown}</p>'
            f'<p class="muted">{t("dash.bulk.note", cap=browse.BULK_MAX, scanned=browse.MAX_SCANNED)}</p>{form}')
    return page(view, _("dash.bulk.title_" + name), body)


def found(view: View, rows: Sequence[JobLine], text: str) -> str:
    """The jobs a search found (an id, or an idempotency key in several topics)."""
    return page(view, _("dash.found_title", text=text), job_table(view, rows))


def job_table(view: View, rows: Sequence[JobLine]) -> str:
    body = []
    for j in rows:
        act = (action(view, f"/jobs/{j.id}/retry", _("dash.redrive"), "go") if j.state in REDRIVABLE
               else action(view, f"/jobs/{j.id}/cancel", _("dash.cancel"), "danger"))
        body.append(f'<tr id="job-{j.id}"><td><a href="/jobs/{j.id}">{j.id}</a></td><td>{esc(j.topic)}</td>'
                    f'<td>{badge(j.state)}</td><td class="n">{j.attempts}/{j.max_attempts}</td>'
                    f"<td>{when(j.updated_at)}</td>"
                    f'<td class="err">{esc((j.last_error or "-")[:400])}</td><td>{act}</td></tr>')
    head = headings("dash.col.job", "dash.col.topic", "dash.col.state", "dash.col.attempts",
                    "dash.col.since", "dash.col.last_error", "")
    return f"<table>{head}{''.join(body)}</table>"


def job(view: View, j: JobView) -> str:
    rows = [("dash.fact.topic", f'<a href="/jobs?topic={q(j.topic)}">{esc(j.topic)}</a>'),
            ("dash.fact.state", badge(j.state)),
            ("dash.fact.attempts", t("dash.attempts_of", attempts=j.attempts,
                                     max_attempts=j.max_attempts)),
            ("dash.fact.priority", str(j.priority)),
            ("dash.fact.key", esc(j.key) if j.key is not None else "-"),
            ("dash.fact.created", when(j.created_at)),
            ("dash.fact.updated", when(j.updated_at))]
    if j.state in CLAIMABLE:
        rows.append(("dash.fact.available", when(j.available_at)))
    if j.locked_by:
        rows += [("dash.fact.held_by", esc(j.locked_by)), ("dash.fact.lease_until", when(j.locked_until))]
    if j.parents:  # what it waits for, or waited for: the first MAX_PARENTS, then how many more
        shown = " ".join(f'<a href="/jobs/{pid}" id="parent-{pid}">{pid}</a> {badge(state)}'
                         for pid, state in j.parents)
        more = j.parents_total - len(j.parents)
        rows.append(("dash.fact.parents", shown + (" " + esc(_n("dash.more_parents", more)) if more > 0 else "")))
    if j.children:  # what waits, or waited, for it: the first MAX_CHILDREN, then "..."
        shown = " ".join(f'<a href="/jobs/{cid}" id="child-{cid}">{cid}</a> {badge(state)}'
                         for cid, state in j.children[:MAX_CHILDREN])
        rows.append(("dash.fact.children", shown + (" ..." if len(j.children) > MAX_CHILDREN else "")))
    facts = "".join(f"<dt>{t(k)}</dt><dd>{v}</dd>" for k, v in rows)
    acts = []
    if j.state in REDRIVABLE:
        acts.append(action(view, f"/jobs/{j.id}/retry", _("dash.redrive"), "go", "retry"))
    if j.state in CANCELABLE:
        acts.append(action(view, f"/jobs/{j.id}/cancel", _("dash.cancel"), "danger", "cancel"))
    actions = f'<div class="actions">{"".join(acts)}</div>' if any(acts) else ""
    parts = [f'<dl id="facts">{facts}</dl>', actions]
    if j.tree:
        parts.append(f'<h2>{t("dash.workflow")}</h2><div id="tree">{tree(j)}</div>'
                     f'<p class="muted">{t("dash.tree_note", depth=TREE_DEPTH, fan=TREE_FAN, nodes=TREE_NODES)}</p>')
    if j.steps:
        parts.append(f'<h2>{t("dash.steps")}</h2>{steps(j.steps)}')
    if j.last_error:
        parts.append(f'<h2>{t("dash.last_error")}</h2><pre id="last-error">{esc(j.last_error[:MAX_SHOWN])}</pre>')
    parts.append(f'<h2>{t("dash.payload")}</h2>{pretty(j.payload, j.payload_length)}')
    if j.result is not None and j.result_length is not None:
        parts.append(f'<h2>{t("dash.result")}</h2>{pretty(j.result, j.result_length)}')
    if j.progress is not None and j.progress_length is not None:
        parts.append(f'<h2>{t("dash.progress")}</h2>{pretty(j.progress, j.progress_length)}')
    # a finished job changes no more (unless re-driven): its page holds still to be read
    return page(view, _("dash.job_title", id=j.id), "".join(parts), refresh=j.state not in TERMINAL)


def steps(lines: tuple[StepLine, ...]) -> str:
    """A job's durable steps: the first MAX_STEPS, and a note when it has more."""
    body = "".join(
        f'<tr id="step-{i}"><td>{esc(s.name)}</td><td>{esc(s.kind)}</td>'
        f'<td>{pretty(s.result, s.result_length) if s.result is not None and s.result_length is not None else "-"}</td>'
        f'<td class="n">{s.attempt if s.attempt is not None else "-"}</td><td>{when(s.at)}</td></tr>'
        for i, s in enumerate(lines[:MAX_STEPS]))
    head = headings("dash.col.step", "dash.col.kind", "dash.result", "dash.col.attempt", "dash.col.since")
    more = f'<p class="muted">{t("dash.steps_more", shown=MAX_STEPS)}</p>' if len(lines) > MAX_STEPS else ""
    return f'<table id="steps">{head}{body}</table>{more}'


def tree(j: JobView) -> str:
    """A job's workflow: its ancestors above it, its descendants below it, as nested
    lists (a job reached by two ways is shown under each), ids and states only."""
    under: dict[tuple[str, int, int], list[TreeNode]] = {}
    for n in j.tree:
        under.setdefault((n.way, n.via, n.depth), []).append(n)

    def branch(way: str, via: int, depth: int) -> str:
        nodes = under.get((way, via, depth), [])
        if not nodes:
            return ""
        return "<ul>" + "".join(
            f'<li class="{esc(way)}"><a href="/jobs/{n.id}">{n.id}</a> {badge(n.state)}'
            f"{branch(way, n.id, depth + 1)}</li>" for n in nodes) + "</ul>"

    parents, children = branch("up", j.id, 1), branch("down", j.id, 1)
    return ((f'<div id="tree-up"><h3>{t("dash.tree_up")}</h3>{parents}</div>' if parents else "")
            + f'<p class="tree-self">{j.id} {badge(j.state)}</p>'
            + (f'<div id="tree-down"><h3>{t("dash.tree_down")}</h3>{children}</div>' if children else ""))


def login(view: View, error: str, next_path: str | None) -> str:
    if not view.can_log_in:
        return message(view, _("dash.read_only_title"), _("dash.read_only_text"))
    err = f'<p class="error" id="login-error">{esc(error)}</p>' if error else ""
    return page(view, _("dash.log_in_title"),
                f'<form class="login" method="post" action="/login">{err}'
                f'<label>{t("dash.token_label")}<input type="password" name="token" '
                f'id="token" autocomplete="current-password" autofocus></label>'
                f'<input type="hidden" name="next" value="{esc(next_path or "/")}">'
                f'<button type="submit" id="submit">{t("dash.log_in")}</button></form>'
                f'<p class="muted">{t("dash.login_note")}</p>')


def message(view: View, title: str, text: str) -> str:
    return page(view, title, f'<p id="message">{esc(text)}</p><p><a href="/">{t("dash.back")}</a></p>')
