"""`brooq declare --app MODULE:OBJECT` (brooq.reconcile): the database comes to hold the
topics and schedules a brooq.Registry declares. A dry run shows the changes and writes
nothing; a run creates and changes; what the database holds beyond the code is listed,
and deleted only with --prune (a topic that still has jobs is kept); a second run
changes nothing. The refusals speak the CLI's words."""

from __future__ import annotations

import textwrap
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import brooq
import psycopg
import pytest
from brooq.reconcile import Change
from helpers import brooq_cli

Conn = psycopg.Connection[tuple[Any, ...]]

APP = '''
import dataclasses
from datetime import timedelta

import brooq


@dataclasses.dataclass
class Report:
    kind: str
    recipients: list[str] = dataclasses.field(default_factory=list)


registry = brooq.Registry()


@brooq.periodic("{cron}", name="report.nightly", payload=Report("nightly", ["ops@example.com"]))
@registry.task("report", max_attempts={attempts}, retention=timedelta(days=7))
def report(job: brooq.Job, r: Report) -> None: ...


@registry.task("email")
def email(job: brooq.Job) -> None: ...


registry.topic("audit", retention=timedelta(days={audit_days}))
registry.schedule("audit.sweep", "*/5 * * * *", "audit", {{"sweep": True}}, priority={priority})
'''


def write_app(directory: Path, *, cron: str = "0 3 * * *", attempts: int = 3, audit_days: int = 90,
              priority: int = 0) -> None:
    (directory / "shopapp.py").write_text(textwrap.dedent(APP.format(
        cron=cron, attempts=attempts, audit_days=audit_days, priority=priority)))


def declare(db: str, cwd: Path, *args: str) -> tuple[int, list[str], str]:
    done = brooq_cli("declare", "--app", "shopapp:registry", *args, dsn=db, cwd=cwd)
    return done.returncode, done.stdout.splitlines(), done.stderr


def state(conn: Conn) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    topics = conn.execute("select name, max_attempts, retention from brooq.topics order by name").fetchall()
    schedules = conn.execute("select name, cron, topic, payload, priority from brooq.schedules"
                             " order by name").fetchall()
    return topics, schedules


CREATED = [
    "+ topic audit: retention=90d",
    "+ topic email: the default settings",
    "+ topic report: max_attempts=3 retention=7d",
    "+ schedule audit.sweep: cron=*/5 * * * * topic=audit payload={\"sweep\":true}",
    "+ schedule report.nightly: cron=0 3 * * * topic=report "
    "payload={\"kind\":\"nightly\",\"recipients\":[\"ops@example.com\"]}",
]


def test_a_dry_run_shows_the_changes_and_writes_nothing_then_a_run_makes_them(
        db: str, conn: Conn, tmp_path: Path) -> None:
    write_app(tmp_path)
    code, out, err = declare(db, tmp_path, "--dry-run")
    assert (code, out) == (0, [*CREATED, "dry run, nothing written: 5 to create, 0 to change, 0 to delete"]), err
    assert state(conn) == ([], [])
    code, out, err = declare(db, tmp_path)
    assert (code, out) == (0, [*CREATED, "declared: 5 created, 0 changed, 0 deleted"]), err
    assert state(conn) == (
        [("audit", 5, timedelta(days=90)), ("email", 5, timedelta(days=30)), ("report", 3, timedelta(days=7))],
        [("audit.sweep", "*/5 * * * *", "audit", {"sweep": True}, 0),
         ("report.nightly", "0 3 * * *", "report", {"kind": "nightly", "recipients": ["ops@example.com"]}, 0)])
    code, out, err = declare(db, tmp_path)  # idempotent
    assert (code, out) == (0, ["nothing changes: the database holds the topics and schedules the code declares"]), err


def test_a_run_changes_what_differs_and_only_that(db: str, conn: Conn, tmp_path: Path) -> None:
    write_app(tmp_path)
    assert declare(db, tmp_path)[0] == 0
    brooq.pause_topic(conn, "report")  # not a setting: kept
    write_app(tmp_path, cron="30 4 * * *", attempts=5, audit_days=30, priority=7)
    code, out, err = declare(db, tmp_path, "--dry-run")
    changed = ["~ topic audit: retention 90d -> 30d",
               "~ topic report: max_attempts 3 -> 5",
               "~ schedule audit.sweep: priority 0 -> 7",
               "~ schedule report.nightly: cron 0 3 * * * -> 30 4 * * *"]
    assert (code, out) == (0, [*changed, "dry run, nothing written: 0 to create, 4 to change, 0 to delete"]), err
    assert state(conn)[0][2] == ("report", 3, timedelta(days=7))
    code, out, err = declare(db, tmp_path)
    assert (code, out) == (0, [*changed, "declared: 0 created, 4 changed, 0 deleted"]), err
    topics, schedules = state(conn)
    assert topics == [("audit", 5, timedelta(days=30)), ("email", 5, timedelta(days=30)),
                      ("report", 5, timedelta(days=7))]
    assert [(s[0], s[1], s[4]) for s in schedules] == [("audit.sweep", "*/5 * * * *", 7),
                                                       ("report.nightly", "30 4 * * *", 0)]
    assert conn.execute("select paused from brooq.topics where name = 'report'").fetchone() == (True,)
    assert declare(db, tmp_path)[1] == ["nothing changes: the database holds the topics and schedules "
                                        "the code declares"]


def test_what_the_code_does_not_declare_is_deleted_only_with_prune(db: str, conn: Conn, tmp_path: Path) -> None:
    write_app(tmp_path)
    assert declare(db, tmp_path)[0] == 0
    brooq.declare_topic(conn, "old")
    brooq.declare_topic(conn, "busy")
    brooq.enqueue(conn, "busy", {})
    brooq.schedule(conn, "old.pulse", "0 * * * *", "old", ticker="workers")
    code, out, err = declare(db, tmp_path)
    unlisted = ["? topic busy: not in the code; --prune deletes it",
                "? topic old: not in the code; --prune deletes it",
                "? schedule old.pulse: not in the code; --prune deletes it"]
    assert (code, out) == (0, [*unlisted, "nothing changes: the database holds the topics and schedules "
                                          "the code declares"]), err
    code, out, err = declare(db, tmp_path, "--prune", "--dry-run")
    pruned = ["! topic busy: not in the code, kept: it still has jobs (brooq drop-topic busy --force deletes them)",
              "- topic old",
              "- schedule old.pulse"]
    assert (code, out) == (0, [*pruned, "dry run, nothing written: 0 to create, 0 to change, 2 to delete"]), err
    assert {t[0] for t in state(conn)[0]} == {"audit", "busy", "email", "old", "report"}
    code, out, err = declare(db, tmp_path, "--prune")
    assert (code, out) == (0, [*pruned, "declared: 0 created, 0 changed, 2 deleted"]), err
    topics, schedules = state(conn)
    assert [t[0] for t in topics] == ["audit", "busy", "email", "report"]
    assert [s[0] for s in schedules] == ["audit.sweep", "report.nightly"]
    assert declare(db, tmp_path, "--prune")[1] == [
        pruned[0], "nothing changes: the database holds the topics and schedules the code declares"]


def test_a_value_the_database_refuses_fails_the_dry_run_and_the_run_writing_nothing(
        db: str, conn: Conn, tmp_path: Path) -> None:
    write_app(tmp_path, cron="every day")
    for args in (["--dry-run"], []):
        code, out, err = declare(db, tmp_path, *args)
        assert (code, out) == (1, []), err
        assert err.startswith("brooq: error: ") and "every day" in err and "22023" in err, err
    assert state(conn) == ([], [])  # the topics declared before the refused schedule: rolled back


def test_the_refusals_speak_the_clis_words(db: str, tmp_path: Path) -> None:
    (tmp_path / "other.py").write_text(textwrap.dedent('''
        import brooq
        empty = brooq.Registry()
        worker = brooq.Worker("postgresql://nobody@localhost/none")
        typo = brooq.Registry()
        typo.topic("audit")
        typo.schedule("sweep", "0 * * * *", "adit")
    '''))
    cases = {
        ("--app", "other"): (2, "brooq: error: invalid --app 'other': use MODULE:OBJECT, e.g. "
                                "myapp.tasks:registry"),
        ("--app", "nosuch:registry"): (1, "brooq: error: cannot import 'nosuch': No module named 'nosuch'"),
        ("--app", "other:registr"): (1, "brooq: error: module 'other' has no 'registr'"),
        ("--app", "other:worker"): (1, "brooq: error: other:worker is a Worker, not a brooq.Registry (OBJECT is "
                                       "a brooq.Registry or a callable returning one)"),
        ("--app", "other:empty"): (1, "brooq: error: other:empty declares no task, topic or schedule: "
                                      "nothing to declare"),
        ("--app", "other:typo"): (1, "brooq: error: schedule sweep: its topic adit is neither a task's nor a "
                                     "topic of the registry (Registry.topic declares one)"),
    }
    for args, (status, line) in cases.items():
        done = brooq_cli("declare", *args, dsn=db, cwd=tmp_path)
        assert (done.returncode, done.stdout) == (status, ""), (args, done.stderr)
        assert done.stderr.splitlines()[-1] == line, args
    missing = brooq_cli("declare", dsn=db, cwd=tmp_path)
    assert missing.returncode == 2
    assert "brooq: error: the following arguments are required: --app" in missing.stderr


def test_registry_declare_returns_the_changes(conn: Conn) -> None:
    """The library's face: Registry.declare on a psycopg connection, in one transaction."""
    registry = brooq.Registry()
    registry.topic("audit", max_attempts=2)
    registry.schedule("audit.sweep", "0 * * * *", "audit", ticker="workers")
    assert registry.declare(conn, dry_run=True) == [
        Change("topic", "create", "audit", values=(("max_attempts", 2),)),
        Change("schedule", "create", "audit.sweep",
               values=(("cron", "0 * * * *"), ("topic", "audit"), ("payload", {}), ("ticker", "workers")))]
    assert brooq.topic_stats(conn) == []
    assert [c.action for c in registry.declare(conn)] == ["create", "create"]
    assert registry.declare(conn) == []
    role = f"declare_{uuid.uuid4().hex[:8]}"
    conn.execute(f"create role {role}; grant brooq_producer to {role}")
    try:
        with psycopg.connect(conn.info.dsn, autocommit=True) as other:
            other.execute(f"set role {role}")
            with pytest.raises(brooq.PermissionDenied, match="grant brooq_admin"):
                registry.declare(other)
    finally:
        conn.execute(f"drop role {role}")
