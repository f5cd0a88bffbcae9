"""The `brooq` command: run a worker, enqueue, look at jobs and topics, deploy, demo.

Every command that talks to the database takes --dsn (default: $BROOQ_DSN).
Errors are printed as one line (the SQLSTATE and its condition name included) and
exit with status 1; a bad command line exits with status 2.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import shlex
import sys
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TextIO

import psycopg
import psycopg.errors

from brooq import admin, config, durable, producer, settings
from brooq._version import __version__
from brooq.declared import Setting
from brooq.errors import BrooqError, ConfigError, PermissionDenied
from brooq.messages import _, _n, closest
from brooq.producer import JobFate
from brooq.redact import one_line, remember
from brooq.rows import ChildJob, HealthCheck, ParentJob, ScheduleStatus, TopicStats
from brooq.schema_check import SchemaMismatch, check_schema
from brooq.settings import Topic
from brooq.states import CLAIMABLE, HELD_BY, STATES, TERMINAL
from brooq.tools import queries as tool_queries
from brooq.tools.text import describe, format_duration, format_table, format_time, setting_text

if TYPE_CHECKING:
    from brooq.partitions import PartitionedWorker
    from brooq.tasks import Registry
    from brooq.worker import Worker

Connection = psycopg.Connection[tuple[Any, ...]]


class Failure(Exception):
    """An error for the user: printed as one line, exit status 1."""


class UsageError(Exception):
    """A bad command line that argparse could not catch: exit status 2."""


# --- values -----------------------------------------------------------------

def parse_duration(text: str) -> timedelta:
    """`100ms`, `5s`, `1.5m`, `2h`, `1d`, `1m30s`: a number and a unit, always."""
    try:
        return config.parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


# --- database ---------------------------------------------------------------------

def dsn_of(args: argparse.Namespace) -> str:
    dsn: str | None = args.dsn or os.environ.get("BROOQ_DSN")
    if not dsn:
        raise UsageError(_("cli.no_dsn"))
    remember(dsn)  # no message shows its password, in any spelling (brooq.redact)
    return dsn


def connect(args: argparse.Namespace) -> Connection:
    dsn = dsn_of(args)
    try:
        return psycopg.connect(dsn, autocommit=True)
    except psycopg.OperationalError as exc:
        message = one_line(exc) or "connection failed"
        raise Failure(_("cli.cannot_connect", reason=message)) from exc
    except psycopg.ProgrammingError as exc:
        raise Failure(_("cli.invalid_dsn", reason=one_line(exc))) from exc


# A column, function or table the command needs is missing: the database may hold a
# schema older than this package (brooq deploy upgrades it).
MISSING_SQLSTATES = frozenset({"42703", "42883", "42P01"})


def schema_mismatch(args: argparse.Namespace, exc: BaseException) -> SchemaMismatch | None:
    """Why a command met a missing column, function or table, when the reason is the
    schema's version: the SchemaMismatch the worker raises at start (an older schema:
    run brooq deploy), else None (the error stands as it is: no schema at all already
    says to deploy one)."""
    if getattr(exc, "sqlstate", None) not in MISSING_SQLSTATES:
        return None
    dsn = getattr(args, "dsn", None) or os.environ.get("BROOQ_DSN")
    if not dsn:
        return None
    try:
        with psycopg.connect(dsn, autocommit=True, connect_timeout=10) as conn:
            check_schema(conn, __version__)
    except SchemaMismatch as mismatch:
        if mismatch.sqlstate is not None:  # no schema brooq, or none with brooq.version()
            return None
        mismatch.__context__ = None  # its own line, not the error it explains
        return mismatch
    except (psycopg.Error, BrooqError):
        return None
    return None


# The commands whose NAME argument is a topic (the others name it TOPIC)
NAMES_A_TOPIC = frozenset({"drop-topic", "alter-topic", "topic"})
TOPIC_NAMES = "select t.name from brooq.topics t"


def topic_hint(args: argparse.Namespace, exc: BaseException) -> str | None:
    """The hint of a topic's error in the command line's words (its commands and
    options, not the SQL function's arguments), offering the closest existing topic
    when the one given does not exist; None: the error's own hint stands."""
    sqlstate = getattr(exc, "sqlstate", None)
    topic = getattr(args, "name" if args.command in NAMES_A_TOPIC else "topic", None)
    if not isinstance(topic, str) or sqlstate not in ("42704", "55006"):
        return None
    shown = shlex.quote(topic[:100])
    if sqlstate == "55006":  # jobs or schedules remain
        return _("cli.hint.topic_in_use", topic=shown) if args.command == "drop-topic" else None
    close = closest(topic, topic_names(args))
    hint = _("cli.hint.list_topics") if args.command == "drop-topic" else _("cli.hint.declare_topic", topic=shown)
    return hint if close is None else f"{_('cli.hint.did_you_mean', name=shlex.quote(close))} {hint}"


def topic_names(args: argparse.Namespace) -> list[str]:
    """Every topic's name ([] when they cannot be read)."""
    try:
        with connect(args) as conn:
            return [name for (name,) in conn.execute(TOPIC_NAMES).fetchall()]
    except (Failure, UsageError, psycopg.Error):
        return []


# --- commands ---------------------------------------------------------------------

def parse_payload(text: str) -> Any:
    """The JSON text of a payload ('-': read it from stdin); NaN and Infinity are not JSON."""
    if text == "-":
        text = sys.stdin.read()

    def refuse(constant: str) -> Any:
        raise ValueError(_("cli.not_a_json_value", constant=constant))

    try:
        return json.loads(text, parse_constant=refuse)
    except ValueError as exc:
        shown = text if len(text) <= 60 else text[:57] + "..."
        raise Failure(_("cli.bad_json", error=exc, text=shown)) from exc


def cmd_enqueue(args: argparse.Namespace, out: TextIO) -> int:
    payload = parse_payload(args.payload)
    with connect(args) as conn:
        job = producer.enqueue(conn, args.topic, payload, key=args.key, delay=args.delay,
                               at=args.at, priority=args.priority)
    out.write(_("cli.enqueued", id=job.id, created="true" if job.created else "false") + "\n")
    return 0


def format_fate(fate: JobFate) -> str:
    """A job's fate on one line: id, topic, state, attempts, last_error, result, times."""
    parts = [f"job {fate.id}", f"topic={fate.topic}", f"state={fate.state}",
             f"attempts={fate.attempts}/{fate.max_attempts}"]
    if fate.priority:
        parts.append(f"priority={fate.priority}")
    if fate.key is not None:
        parts.append(f"key={json.dumps(fate.key)}")
    if fate.result is not None:
        parts.append(f"result={json.dumps(fate.result, separators=(',', ':'))}")
    if fate.last_error:
        parts.append(f"last_error={json.dumps(' '.join(fate.last_error.split())[:300])}")
    parts.append(f"created={format_time(fate.created_at)}")
    parts.append(f"updated={format_time(fate.updated_at)}")
    if fate.state in CLAIMABLE:
        parts.append(f"available={format_time(fate.available_at)}")
    if fate.locked_by:
        parts.append(f"locked_by={fate.locked_by} until={format_time(fate.locked_until)}")
    if fate.progress is not None:
        parts.append(f"progress={json.dumps(fate.progress, separators=(',', ':'))}")
    return " ".join(parts)


def json_value(value: Any) -> Any:
    """A row's value for --json: instants in ISO 8601, durations in seconds."""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, timedelta):
        return value.total_seconds()
    return value


def json_row(row: JobFate | TopicStats | ParentJob | ChildJob | ScheduleStatus | HealthCheck | durable.Step
             ) -> dict[str, Any]:
    return {k: json_value(v) for k, v in row._asdict().items()}


def write_json(out: TextIO, value: Any) -> None:
    out.write(json.dumps(value, ensure_ascii=False) + "\n")


CHILDREN_SHOWN = 20  # brooq job's line; --json lists up to 10,000
STEPS_SHOWN = 20  # brooq job's line; --json lists them all


def cmd_job(args: argparse.Namespace, out: TextIO) -> int:
    with connect(args) as conn:
        fate = producer.get_job(conn, args.id)
        parents = producer.parents(conn, args.id) if fate is not None else []
        children = producer.children(conn, args.id, limit=10000 if args.json else CHILDREN_SHOWN + 1) \
            if fate is not None else []
        steps = durable.steps(conn, args.id, None if args.json else STEPS_SHOWN + 1) if fate is not None else []
    if fate is None:
        raise Failure(_("cli.job_not_found", id=args.id))
    if args.json:
        write_json(out, json_row(fate) | {"parents": [json_row(p) for p in parents],
                                          "children": [json_row(c) for c in children],
                                          "steps": [json_row(s) for s in steps]})
    else:
        line = format_fate(fate)
        if parents:  # what it waits for, or waited for (workflows)
            line += " parents=" + ",".join(f"{p.id}:{p.state}" for p in parents)
        if children:  # what waits, or waited, for it
            line += " children=" + ",".join(f"{c.id}:{c.state}" for c in children[:CHILDREN_SHOWN])
            if len(children) > CHILDREN_SHOWN:
                line += ",..."
        if steps:  # what it finished, and the wait it is in (durable steps)
            line += " steps=" + ",".join(s.name if s.kind == "step" else f"{s.name}:{s.kind}"
                                         for s in steps[:STEPS_SHOWN])
            if len(steps) > STEPS_SHOWN:
                line += ",..."
        out.write(line + "\n")
    return 0


def cmd_jobs(args: argparse.Namespace, out: TextIO) -> int:
    with connect(args) as conn:
        jobs = producer.list_jobs(conn, topic=args.topic, states=args.state, limit=args.limit)
    if args.json:
        write_json(out, [json_row(j) for j in jobs])
        return 0
    if not jobs:
        out.write(_("cli.no_jobs_match") + "\n")
        return 0
    headers = headings("id", "topic", "state", "attempts", "updated", "last_error")
    table = [[j.id, j.topic, j.state, f"{j.attempts}/{j.max_attempts}", format_time(j.updated_at),
              " ".join((j.last_error or "-").split())[:80]] for j in jobs]
    out.write(format_table(headers, table) + "\n")
    return 0


def headings(*columns: str) -> list[str]:
    """A table's column headings in the current language (keys col.<column>)."""
    keys = ["col." + column for column in columns]
    return [_(key) for key in keys]


def held(r: TopicStats) -> str:
    """The ready jobs a flow limit keeps back now, by limit: "2 in_flight, 1 group", or "-"."""
    parts = [f"{n} {limit}" for limit in HELD_BY if (n := getattr(r, f"held_by_{limit}"))]
    return ", ".join(parts) or "-"


def cmd_stats(args: argparse.Namespace, out: TextIO) -> int:
    with connect(args) as conn:
        rows = producer.topic_stats(conn)
    if args.json:
        write_json(out, [json_row(r) for r in rows])
        return 0
    if not rows:
        out.write(_("cli.no_topics") + "\n")
        return 0
    headers = headings("topic", "paused", "pending", "failed", "ready", "scheduled", "processing",
                       "expired", "oldest_ready", "held")
    table = [[r.topic, _("cli.yes") if r.paused else _("cli.no"), r.pending, r.failed, r.ready, r.scheduled,
              r.processing, r.expired, format_duration(r.oldest_ready_age), held(r)] for r in rows]
    out.write(format_table(headers, table) + "\n")
    return 0


def cmd_cancel(args: argparse.Namespace, out: TextIO) -> int:
    with connect(args) as conn:
        canceled = admin.cancel(conn, args.id)
    if canceled:
        out.write(_("cli.canceled", id=args.id) + "\n")
        return 0
    out.write(_("cli.not_canceled", id=args.id) + "\n")
    return 1


def cmd_retry(args: argparse.Namespace, out: TextIO) -> int:
    if (args.id is None) == (args.dead is None):
        raise UsageError(_("cli.retry_needs_one"))
    if args.id is not None and (args.canceled or args.max_jobs is not None or args.since is not None):
        raise UsageError(_("cli.retry_dead_options"))
    with connect(args) as conn:
        if args.id is not None:
            redriven = admin.retry(conn, args.id, rearm_children=args.rearm_children)
        else:
            max_jobs = args.max_jobs or 1000
            count = admin.retry_dead(conn, args.dead, include_canceled=args.canceled, max_jobs=max_jobs,
                                     since=args.since, rearm_children=args.rearm_children)
    if args.id is not None:
        if redriven:
            out.write(_("cli.redriven", id=args.id) + "\n")
            return 0
        out.write(_("cli.not_redriven", id=args.id) + "\n")
        return 1
    key = "cli.redrove_dead_or_canceled" if args.canceled else "cli.redrove_dead"
    out.write(_n(key, count, topic=args.dead) + "\n")
    if count == max_jobs:
        out.write(_("cli.max_jobs_reached", max_jobs=max_jobs) + "\n")
    return 0


def cmd_flush(args: argparse.Namespace, out: TextIO) -> int:
    states = list(TERMINAL if args.completed else CLAIMABLE)  # --completed: the terminal states
    what = "completed" if args.completed else "waiting"
    with connect(args) as conn:
        try:
            count = producer.count_jobs(conn, topic=args.topic, states=states)
        except PermissionDenied:  # who may not read jobs may not flush them: flush's error names its role
            admin.flush(conn, args.topic, states)
            raise
        if count and not args.yes:
            if not sys.stdin.isatty():
                raise Failure(_n(f"cli.flush_needs_yes_{what}", count, topic=args.topic[:200]))
            out.write(_n(f"cli.flush_confirm_{what}", count, topic=args.topic))
            out.flush()
            if sys.stdin.readline().strip().lower() not in ("y", "yes"):
                out.write(_("cli.nothing_flushed") + "\n")
                return 1
        deleted = admin.flush(conn, args.topic, states)
    out.write(_n(f"cli.flushed_{what}", deleted, topic=args.topic) + "\n")
    return 0


def cmd_schedule(args: argparse.Namespace, out: TextIO) -> int:
    if args.list:
        if args.name or args.cron or args.topic or args.payload is not None:
            raise UsageError(_("cli.schedule_list_alone"))
        with connect(args) as conn:
            rows = admin.list_schedules(conn)
        if args.json:
            write_json(out, [json_row(r) for r in rows])
        elif not rows:
            out.write(_("cli.no_schedules") + "\n")
        else:
            table = [[r.name, r.cron, r.ticker, r.topic, json.dumps(r.payload, separators=(",", ":"))[:60],
                      r.priority, format_time(r.next_tick_at) if r.next_tick_at else "-",
                      format_time(r.last_tick_at) if r.last_tick_at else "-",
                      f"{r.last_job_id} ({r.last_job_state or _('cli.purged')})" if r.last_job_id else "-"]
                     for r in rows]
            out.write(format_table(headings("name", "cron", "ticker", "topic", "payload", "priority",
                                            "next_tick", "last_tick", "last_job"), table) + "\n")
            for r in rows:
                if r.last_error:
                    out.write(_("cli.schedule_error", name=r.name, error=r.last_error) + "\n")
        return 0
    if not (args.name and args.cron and args.topic):
        raise UsageError(_("cli.schedule_usage"))
    payload = parse_payload(args.payload if args.payload is not None else "{}")
    with connect(args) as conn:
        jobid = admin.schedule(conn, args.name, args.cron, args.topic, payload, priority=args.priority,
                               ticker=args.ticker)
    key = "cli.scheduled_workers" if jobid is None else "cli.scheduled"
    out.write(_(key, name=args.name, cron=args.cron, topic=args.topic, jobid=jobid) + "\n")
    return 0


def cmd_drop_topic(args: argparse.Namespace, out: TextIO) -> int:
    with connect(args) as conn:
        deleted = admin.drop_topic(conn, args.name, force=args.force)
    if args.force:
        out.write(_n("cli.dropped_topic_jobs", deleted, topic=args.name) + "\n")
    else:
        out.write(_("cli.dropped_topic", topic=args.name) + "\n")
    return 0


def cmd_unschedule(args: argparse.Namespace, out: TextIO) -> int:
    with connect(args) as conn:
        removed = admin.unschedule(conn, args.name)
    if removed:
        out.write(_("cli.unscheduled", name=args.name) + "\n")
        return 0
    out.write(_("cli.no_such_schedule", name=args.name) + "\n")
    return 1


# `brooq health` exits 0 when every check is ok, HEALTH_WARN when one warns (look at it
# soon), HEALTH_FAIL when one fails (look at it now); 1 and 2 stay errors and usage.
HEALTH_WARN, HEALTH_FAIL = 3, 4


def cmd_health(args: argparse.Namespace, out: TextIO) -> int:
    with connect(args) as conn:
        checks = admin.health(conn)
    if args.json:
        write_json(out, [json_row(c) for c in checks])
    else:
        out.write(format_table(headings("check", "status", "detail"), [[c.name, c.status, c.detail] for c in checks]) + "\n")
    statuses = {c.status for c in checks}
    return HEALTH_FAIL if "fail" in statuses else HEALTH_WARN if "warn" in statuses else 0


# --- topics: declare-topic, alter-topic, topic ------------------------------------

class Clear:
    """The value `none` of a setting that may be none (no limit): alter-topic clears it."""

    def __repr__(self) -> str:
        return "none"


CLEAR = Clear()


def format_settings(topic: Topic) -> str:
    """Every setting of a topic on one line: max_attempts=5 backoff_base=1s ... (paused)."""
    text = " ".join(f"{name}={setting_text(getattr(topic.settings, name))}" for name in settings.NAMES)
    return text + (_("cli.paused_mark") if topic.paused else "")


def given_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The settings given on the command line (CLEAR: `none`)."""
    return {name: getattr(args, name) for name in settings.NAMES if getattr(args, name) is not None}


def cmd_declare_topic(args: argparse.Namespace, out: TextIO) -> int:
    given: dict[str, Any] = {name: None if value is CLEAR else value
                             for name, value in given_settings(args).items()}
    with connect(args) as conn:
        topic = admin.declare_topic_settings(conn, args.name, settings.TopicSettings(**given))
    out.write(_("cli.declared_settings", topic=args.name, settings=format_settings(topic)) + "\n")
    return 0


def cmd_alter_topic(args: argparse.Namespace, out: TextIO) -> int:
    given = given_settings(args)
    if not given:
        raise UsageError(_("cli.alter_nothing"))
    changes = {name: value for name, value in given.items() if value is not CLEAR}
    clear = [name for name, value in given.items() if value is CLEAR]
    with connect(args) as conn:
        topic = admin.alter_topic(conn, args.name, clear=clear, **changes)
    out.write(_("cli.altered_settings", topic=args.name, settings=format_settings(topic)) + "\n")
    return 0


def cmd_topic(args: argparse.Namespace, out: TextIO) -> int:
    with connect(args) as conn:
        topic = producer.get_topic(conn, args.name)
    if topic is None:
        raise Failure(_("cli.no_such_topic", topic=args.name[:200]))
    if args.json:
        write_json(out, {"name": topic.name,
                         **{n: json_value(v) for n, v in settings.parameters(topic.settings).items()},
                         "paused": topic.paused, "created_at": json_value(topic.created_at),
                         "updated_at": json_value(topic.updated_at)})
        return 0
    table = [[f.name, setting_text(getattr(topic.settings, f.name)), setting_text(f.default)]
             for f in settings.SETTINGS]
    out.write(_("cli.topic_heading", topic=topic.name,
                paused=_("cli.yes") if topic.paused else _("cli.no"),
                created=format_time(topic.created_at), updated=format_time(topic.updated_at)) + "\n")
    out.write(format_table(headings("setting", "value", "default"), table) + "\n")
    return 0


def cmd_pause(args: argparse.Namespace, out: TextIO) -> int:
    pause = args.command == "pause"
    with connect(args) as conn:
        changed = (admin.pause_topic if pause else admin.resume_topic)(conn, args.topic)
    if pause:
        out.write(_("cli.paused" if changed else "cli.already_paused", topic=args.topic) + "\n")
    else:
        out.write(_("cli.resumed" if changed else "cli.not_paused", topic=args.topic) + "\n")
    return 0


def cmd_deploy(args: argparse.Namespace, out: TextIO) -> int:
    from brooq.tools.deploy import DeployError, deploy

    dsn = dsn_of(args)
    try:
        done = deploy(dsn, root=args.root, method=args.method)
    except DeployError as exc:
        raise Failure(str(exc)) from exc
    if args.verbose and done.output:
        out.write(done.output + "\n")
    changes = sum(1 for line in done.output.splitlines() if line.lstrip().startswith("+ "))
    if done.adopted:
        out.write(_("cli.deploy_adopted", version=done.adopted) + "\n")
    if done.method == "sqitch":
        summary = (_n("cli.deployed_changes", changes) if changes
                   else _("cli.deploy_up_to_date"))
    elif done.current:
        summary = done.output
    else:
        summary = _("cli.deployed_psql")
    out.write(summary + "\n")
    return 0


# --- declare: a Registry's topics and schedules (brooq.reconcile) ---------------------

def load_object(spec: str, invalid: str, made: tuple[type, ...],
                raised: tuple[type[BaseException], ...]) -> Any:
    """MODULE:OBJECT, imported from the current directory as python -m does; an OBJECT
    that is not of a type of ``made`` but callable is called, and what it returns is the
    answer. ``invalid``: the message of a SPEC without its colon; ``raised``: the errors
    of that call that pass as they are (any other one is a Failure naming SPEC)."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise UsageError(_(invalid, spec=spec))
    if "" not in sys.path and str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))  # like python -m: modules of the current directory
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise Failure(_("cli.cannot_import", module=module_name, error=exc)) from exc
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError as exc:
            raise Failure(_("cli.no_attribute", module=module_name, attr=attr)) from exc
    if not isinstance(obj, made) and callable(obj) and not isinstance(obj, type):
        try:
            obj = obj()
        except raised:
            raise
        except Exception as exc:
            raise Failure(_("cli.call_failed", spec=spec, error=f"{type(exc).__name__}: {exc}")) from exc
    return obj


def load_registry(spec: str) -> Registry:
    """MODULE:OBJECT -> a brooq.Registry (OBJECT may also be a callable returning one)."""
    from brooq.tasks import Registry, Task

    obj = load_object(spec, "cli.invalid_app", (Registry, Task), (BrooqError,))
    if not isinstance(obj, Registry):
        raise Failure(_("cli.not_a_registry", spec=spec, type=type(obj).__name__))
    if obj.empty():
        raise Failure(_("cli.declares_nothing", spec=spec))
    return obj


def cmd_declare(args: argparse.Namespace, out: TextIO) -> int:
    from brooq.reconcile import declare
    from brooq.tools import declare as shown

    registry = load_registry(args.app)
    with connect(args) as conn:
        changes = declare(conn, registry, prune=args.prune, dry_run=args.dry_run)
    shown.write(changes, out, dry_run=args.dry_run)
    return 0


# --- worker -------------------------------------------------------------------------

def load_worker(spec: str) -> Worker:
    """MODULE:OBJECT -> a brooq.Worker (OBJECT may also be a callable returning one)."""
    from brooq.worker import Worker

    obj = load_object(spec, "cli.invalid_worker", (Worker,), (BrooqError, ConfigError))
    if not isinstance(obj, Worker):
        raise Failure(_("cli.not_a_worker", spec=spec, type=type(obj).__name__))
    return obj


LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def cmd_worker(args: argparse.Namespace, out: TextIO) -> int:
    from brooq.tools.processes import progress_label, run_processes, watch_parent
    from brooq.tools.progress import LogToProgress, Progress

    if args.processes > 1:  # a supervisor of N `brooq worker` children (brooq.tools.processes)
        to_stderr = logging.StreamHandler(sys.stderr)
        to_stderr.setFormatter(logging.Formatter(LOG_FORMAT, "%H:%M:%S"))
        logging.getLogger("brooq.processes").addHandler(to_stderr)
        logging.getLogger("brooq.processes").setLevel(args.log_level)
        return run_processes(args.argv, args.processes)
    # The options reach the brooq.Worker the module makes as it is imported: they win
    # over the values the module gives in code, and over BROOQ_* variables.
    given = {f.name: getattr(args, f.name, None) for f in config.SETTINGS}
    if args.partition and not given["dsn"]:
        given["dsn"] = args.partition[0]
    from brooq.lifecycle import loading

    with config.command_line(given), loading(args.worker):
        loaded = load_worker(args.worker)
    worker: Worker | PartitionedWorker = loaded
    if args.partition:  # one Worker per partition, the handlers shared (docs/scale-out.md)
        from brooq.partitions import PartitionedWorker

        worker = PartitionedWorker.of(loaded, args.partition)
    watch_parent(worker.stop)  # a child of --processes stops when its parent is gone
    mode = args.progress
    live = {"auto": None, "live": True, "log": False, "off": False}[mode]
    progress = Progress(worker.snapshot, sys.stderr, live=live, prefix=progress_label())
    # Log lines above the live line (through the progress display), or plain on stderr.
    handler: logging.Handler = (LogToProgress(progress) if progress.live and mode != "off"
                                else logging.StreamHandler(sys.stderr))
    handler.setFormatter(logging.Formatter(LOG_FORMAT, "%H:%M:%S"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(args.log_level)
    try:
        if mode == "off":
            worker.run()
        else:
            with progress:
                worker.run()
    finally:
        root.removeHandler(handler)
    return 0


# --- dashboard ----------------------------------------------------------------------

def dashboard_token(args: argparse.Namespace) -> str | None:
    """--token, else --token-file, else $BROOQ_DASHBOARD_TOKEN; None: read-only."""
    token: str | None = args.token
    if token is None and args.token_file is not None:
        try:
            token = args.token_file.read_text().strip()
        except OSError as exc:
            raise Failure(_("cli.token_file", path=args.token_file, error=exc.strerror)) from exc
    if token is None:
        token = os.environ.get("BROOQ_DASHBOARD_TOKEN") or None
    if token is not None and len(token) < 16:
        raise Failure(_n("cli.short_token", len(token)))
    return token


def cmd_dashboard(args: argparse.Namespace, out: TextIO) -> int:
    from brooq.tools import dashboard

    if not dashboard.available():
        raise Failure(_("cli.dashboard_needs", hint=dashboard.HINT))
    dsn = dsn_of(args)
    try:
        host, port = config.parse_address(args.address)
    except ValueError as exc:
        raise UsageError(_("cli.bad_address", error=exc)) from None
    if not args.public and not config.is_loopback(host):
        raise UsageError(_("cli.not_loopback", host=host))
    token = dashboard_token(args)
    allowed = args.allowed_host
    if allowed is None:
        allowed = [n for n in os.environ.get("BROOQ_DASHBOARD_ALLOWED_HOSTS", "").split(",") if n.strip()]
    try:
        dashboard.Hosts.of(host, port, allowed)
    except ValueError as exc:
        raise UsageError(_("cli.bad_allowed_host", error=exc)) from None
    with connect(args) as conn:  # a wrong DSN fails now, in one line, not on the first page
        conn.execute(tool_queries.DASHBOARD_PING)
    try:
        dashboard.serve(dsn, token, host, port, allowed)
    except OSError as exc:
        raise Failure(_("cli.cannot_listen", address=args.address, error=exc.strerror or exc)) from exc
    return 0


# --- demo ---------------------------------------------------------------------------

def cmd_demo(args: argparse.Namespace, out: TextIO) -> int:
    from brooq.tools.demo import run_demo

    dsn = args.dsn or os.environ.get("BROOQ_DSN")
    return run_demo(dsn, jobs=args.jobs, timeout=args.timeout.total_seconds(), out=out,
                    progress=args.progress)


# --- parser -------------------------------------------------------------------------

class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(2, _("cli.error", reason=message) + "\n")


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(_("cli.invalid_number", text=text)) from None
    if value < 1:
        raise argparse.ArgumentTypeError(_("cli.at_least_1", text=text))
    return value


def demo_jobs(text: str) -> int:
    value = positive_int(text)
    if value < 20:
        raise argparse.ArgumentTypeError(_("cli.too_few_demo_jobs", text=text))
    return value


def job_limit(text: str) -> int:
    value = positive_int(text)
    if value > 10000:
        raise argparse.ArgumentTypeError(_("cli.more_than_10000", text=text))
    return value


def job_id(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(_("cli.invalid_job_id", text=text)) from None


def instant(text: str) -> datetime:
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(_("cli.invalid_time", text=text)) from None
    if value.tzinfo is None:
        raise argparse.ArgumentTypeError(_("cli.time_without_zone", text=text))
    return value


def setting_type(f: Setting) -> Callable[[str], Any]:
    """A WorkerConfig setting's parser as an argparse type (its message on bad input)."""
    parse = f.parse

    def parse_option(text: str) -> Any:
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parse_option


def add_setting_options(p: argparse.ArgumentParser) -> None:
    """--<setting> for every field of WorkerConfig (the dsn is the shared --dsn)."""
    for f in config.SETTINGS:
        if f.name == "dsn":
            continue
        p.add_argument(f.option, dest=f.name, type=setting_type(f), metavar=f.name.upper(),
                       help=_("help.worker.setting", doc=f.doc, default=f.shown_default, variable=f.variable))


def topic_setting_type(f: Setting) -> Callable[[str], Any]:
    """A topic setting's parser as an argparse type: a whole number, or a duration as
    --lease takes it (30s, 1m30s); `none` for a setting that may be none (no limit).
    The database checks the range."""
    kind, nullable = f.kind, f.nullable

    def parse_option(text: str) -> Any:
        if nullable and text.strip().lower() == "none":
            return CLEAR
        if kind is timedelta:
            return parse_duration(text)
        try:
            return int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(_("cli.invalid_number", text=text)) from None

    return parse_option


def add_topic_options(p: argparse.ArgumentParser, *, declare: bool) -> None:
    """--<setting> for every field of brooq.TopicSettings; --x/--no-x for a boolean.
    declare-topic: a setting not given takes its default; alter-topic: it is left as is."""
    for f in settings.SETTINGS:
        option = f.option
        doc = _("help.topic." + f.name)
        if declare:
            key = "help.topic.setting_or_none" if f.nullable else "help.topic.setting"
            text = _(key, doc=doc, default=setting_text(f.default))
        else:
            text = _("help.alter_topic.setting_or_none", doc=doc) if f.nullable else doc
        if f.kind is bool:
            p.add_argument(option, dest=f.name, action=argparse.BooleanOptionalAction, default=None, help=text)
        else:
            p.add_argument(option, dest=f.name, type=topic_setting_type(f), metavar=f.name.upper(), help=text)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="brooq", description=_("help.description"))
    parser.add_argument("--version", action="version", version=f"brooq {__version__}")
    dsn = Parser(add_help=False)
    dsn.add_argument("--dsn", help=_("help.dsn"))
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)

    p = sub.add_parser("worker", parents=[dsn], help=_("help.worker"))
    p.add_argument("worker", metavar="MODULE:OBJECT",
                   help=_("help.worker.object"))
    add_setting_options(p)
    p.add_argument("--partition", action="append", metavar="DSN",
                   help=_("help.worker.partition"))
    p.add_argument("--processes", type=positive_int, default=1, metavar="N",
                   help=_("help.worker.processes"))
    p.add_argument("--progress", choices=["auto", "live", "log", "off"], default="auto",
                   help=_("help.progress"))
    p.add_argument("--log-level", choices=["DEBUG", "INFO", "WARNING", "ERROR"], default="INFO",
                   help=_("help.worker.log_level"))
    p.set_defaults(func=cmd_worker, parser=p)

    p = sub.add_parser("enqueue", parents=[dsn], help=_("help.enqueue"))
    p.add_argument("topic")
    p.add_argument("payload", metavar="JSON",
                   help=_("help.enqueue.payload"))
    p.add_argument("--key", help=_("help.enqueue.key"))
    when = p.add_mutually_exclusive_group()
    when.add_argument("--delay", type=parse_duration, help=_("help.enqueue.delay"))
    when.add_argument("--at", type=instant, help=_("help.enqueue.at"))
    p.add_argument("--priority", type=int, default=0, help=_("help.enqueue.priority"))
    p.set_defaults(func=cmd_enqueue, parser=p)

    as_json = Parser(add_help=False)
    as_json.add_argument("--json", action="store_true",
                         help=_("help.json"))

    p = sub.add_parser("job", parents=[dsn, as_json], help=_("help.job"))
    p.add_argument("id", type=job_id)
    p.set_defaults(func=cmd_job, parser=p)

    p = sub.add_parser("jobs", parents=[dsn, as_json],
                       help=_("help.jobs"))
    p.add_argument("--topic", action="append", help=_("help.jobs.topic"))
    p.add_argument("--state", action="append", choices=STATES,
                   help=_("help.jobs.state"))
    p.add_argument("--limit", type=job_limit, default=50, help=_("help.jobs.limit"))
    p.set_defaults(func=cmd_jobs, parser=p)

    p = sub.add_parser("stats", parents=[dsn, as_json], help=_("help.stats"))
    p.set_defaults(func=cmd_stats, parser=p)

    p = sub.add_parser("schedule", parents=[dsn, as_json],
                       help=_("help.schedule"))
    p.add_argument("name", nargs="?", metavar="NAME", help=_("help.schedule.name"))
    p.add_argument("cron", nargs="?", metavar="CRON",
                   help=_("help.schedule.cron"))
    p.add_argument("topic", nargs="?", metavar="TOPIC", help=_("help.schedule.topic"))
    p.add_argument("payload", nargs="?", metavar="JSON", help=_("help.schedule.payload"))
    p.add_argument("--priority", type=int, default=0, help=_("help.schedule.priority"))
    p.add_argument("--ticker", choices=("pg_cron", "workers"), help=_("help.schedule.ticker"))
    p.add_argument("--list", action="store_true", help=_("help.schedule.list"))
    p.set_defaults(func=cmd_schedule, parser=p)

    p = sub.add_parser("unschedule", parents=[dsn], help=_("help.unschedule"))
    p.add_argument("name", metavar="NAME")
    p.set_defaults(func=cmd_unschedule, parser=p)

    p = sub.add_parser("health", parents=[dsn, as_json],
                       help=_("help.health"))
    p.set_defaults(func=cmd_health, parser=p)

    p = sub.add_parser("cancel", parents=[dsn], help=_("help.cancel"))
    p.add_argument("id", type=job_id)
    p.set_defaults(func=cmd_cancel, parser=p)

    p = sub.add_parser("retry", parents=[dsn],
                       help=_("help.retry"))
    p.add_argument("id", type=job_id, nargs="?", metavar="JOB_ID", help=_("help.retry.id"))
    p.add_argument("--dead", metavar="TOPIC", help=_("help.retry.dead"))
    p.add_argument("--canceled", action="store_true", help=_("help.retry.canceled"))
    p.add_argument("--max-jobs", type=positive_int, metavar="N",
                   help=_("help.retry.max_jobs"))
    p.add_argument("--since", type=instant, metavar="TIME",
                   help=_("help.retry.since"))
    p.add_argument("--rearm-children", action="store_true", help=_("help.retry.rearm_children"))
    p.set_defaults(func=cmd_retry, parser=p)

    p = sub.add_parser("flush", parents=[dsn],
                       help=_("help.flush"))
    p.add_argument("topic")
    p.add_argument("--completed", action="store_true",
                   help=_("help.flush.completed"))
    p.add_argument("--yes", action="store_true", help=_("help.flush.yes"))
    p.set_defaults(func=cmd_flush, parser=p)

    p = sub.add_parser("drop-topic", parents=[dsn], help=_("help.drop_topic"))
    p.add_argument("name")
    p.add_argument("--force", action="store_true", help=_("help.drop_topic.force"))
    p.set_defaults(func=cmd_drop_topic, parser=p)

    p = sub.add_parser("declare-topic", parents=[dsn], help=_("help.declare_topic"),
                       description=_("help.declare_topic.description"))
    p.add_argument("name")
    add_topic_options(p, declare=True)
    p.set_defaults(func=cmd_declare_topic, parser=p)

    p = sub.add_parser("alter-topic", parents=[dsn], help=_("help.alter_topic"))
    p.add_argument("name")
    add_topic_options(p, declare=False)
    p.set_defaults(func=cmd_alter_topic, parser=p)

    p = sub.add_parser("topic", parents=[dsn, as_json], help=_("help.topic"))
    p.add_argument("name")
    p.set_defaults(func=cmd_topic, parser=p)

    for name, text in (("pause", _("help.pause")), ("resume", _("help.resume"))):
        p = sub.add_parser(name, parents=[dsn], help=text)
        p.add_argument("topic")
        p.set_defaults(func=cmd_pause, parser=p)

    p = sub.add_parser("deploy", parents=[dsn], help=_("help.deploy"))
    p.add_argument("--method", choices=["auto", "sqitch", "psql"], default="auto",
                   help=_("help.deploy.method"))
    p.add_argument("--root", type=Path, help=_("help.deploy.root"))
    p.add_argument("-v", "--verbose", action="store_true", help=_("help.deploy.verbose"))
    p.set_defaults(func=cmd_deploy, parser=p)

    p = sub.add_parser("declare", parents=[dsn], help=_("help.declare"),
                       description=_("help.declare.description"))
    p.add_argument("--app", required=True, metavar="MODULE:OBJECT", help=_("help.declare.app"))
    p.add_argument("--prune", action="store_true", help=_("help.declare.prune"))
    p.add_argument("--dry-run", action="store_true", help=_("help.declare.dry_run"))
    p.set_defaults(func=cmd_declare, parser=p)

    p = sub.add_parser("dashboard", parents=[dsn],
                       help=_("help.dashboard"))
    p.add_argument("--address", default="127.0.0.1:9470", metavar="HOST:PORT",
                   help=_("help.dashboard.address"))
    p.add_argument("--public", action="store_true",
                   help=_("help.dashboard.public"))
    p.add_argument("--allowed-host", action="append", metavar="NAME[:PORT]",
                   help=_("help.dashboard.allowed_host"))
    p.add_argument("--token", help=_("help.dashboard.token"))
    p.add_argument("--token-file", type=Path, metavar="PATH",
                   help=_("help.dashboard.token_file"))
    p.set_defaults(func=cmd_dashboard, parser=p)

    p = sub.add_parser("demo", parents=[dsn],
                       help=_("help.demo"))
    p.add_argument("--jobs", type=demo_jobs, default=5000, help=_("help.demo.jobs"))
    p.add_argument("--timeout", type=parse_duration, default=timedelta(seconds=90),
                   help=_("help.demo.timeout"))
    p.add_argument("--progress", choices=["auto", "live", "log", "off"], default="auto",
                   help=_("help.progress"))
    p.set_defaults(func=cmd_demo, parser=p)
    return parser


def short_usage(parser: argparse.ArgumentParser) -> str:
    """What `brooq` alone prints: the commands, one line each."""
    lines = [_("cli.usage_line"), "", _("cli.commands")]
    for action in parser._subparsers._group_actions if parser._subparsers else []:
        for choice in getattr(action, "_choices_actions", []):
            lines.append(f"  {choice.dest:<14} {choice.help}")
    lines += ["", _("cli.dsn_note")]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        sys.stderr.write(short_usage(parser))
        return 2
    args.argv = list(sys.argv[1:] if argv is None else argv)  # for the children of --processes
    func: Callable[[argparse.Namespace, TextIO], int] = args.func
    try:
        return func(args, out or sys.stdout)
    except UsageError as exc:
        getattr(args, "parser", parser).print_usage(sys.stderr)
        sys.stderr.write(_("cli.error", reason=exc) + "\n")
        return 2
    except Failure as exc:
        sys.stderr.write(_("cli.error", reason=exc) + "\n")
        return 1
    except ConfigError as exc:
        sys.stderr.write(_("cli.invalid_config", problems="; ".join(exc.problems)) + "\n")
        return 1
    except (psycopg.Error, BrooqError) as exc:
        explained = schema_mismatch(args, exc)
        reason = describe(explained or exc, hint=None if explained else topic_hint(args, exc))
        sys.stderr.write(_("cli.error", reason=reason) + "\n")
        return 1
    except KeyboardInterrupt:
        sys.stderr.write(_("cli.interrupted") + "\n")
        return 130


if __name__ == "__main__":
    sys.exit(main())
