"""A topic's settings, one truth: brooq.settings.TopicSettings against brooq.declare_topic
and brooq.alter_topic in SQL (names, order, types, defaults, ranges), the options of
`brooq declare-topic` and `brooq alter-topic`; declare-topic then `brooq topic` round-trips
every setting, and alter-topic changes only what it names. (The router's signatures are
held to the node's by tests/test_proxy.py::test_the_router_mirrors_the_node_signatures.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import brooq
import psycopg
import pytest
from brooq import settings
from brooq.tools.cli import build_parser

Conn = psycopg.Connection[Any]
BIN = Path(sys.executable).with_name("brooq")
COMMAND = [str(BIN)] if BIN.exists() else [sys.executable, "-m", "brooq.tools"]
SQL_TYPES = {int: "integer", timedelta: "interval", bool: "boolean"}


def cli(*args: str, dsn: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BROOQ_")}
    return subprocess.run([*COMMAND, *args, "--dsn", dsn], capture_output=True, text=True, env=env,
                          timeout=60, check=False)


def arguments(conn: Conn, function: str) -> list[tuple[str, str, Any]]:
    """(name, type, default as Python reads it) of each argument of a brooq function."""
    (text,) = conn.execute("select pg_get_function_arguments(%s::regproc)", [function]).fetchone()
    out = []
    for argument in text.split(", "):
        name, _, rest = argument.partition(" ")
        kind, _, default = rest.partition(" DEFAULT ")
        value = conn.execute(f"select {default}").fetchone()[0] if default else "(required)"
        out.append((name, kind, value))
    return out


def expected() -> list[tuple[str, str, Any]]:
    return [(s.name, settings.sql_type(s), s.default) for s in settings.SETTINGS]


def test_topic_settings_are_declare_topics_arguments(conn: Conn) -> None:
    """Names, order, SQL types and defaults: a setting added to SQL but not to Python fails."""
    assert arguments(conn, "brooq.declare_topic") == [("name", "text", "(required)"), *expected()]


def test_alter_topic_takes_every_setting_and_clear(conn: Conn) -> None:
    assert arguments(conn, "brooq.alter_topic") == [
        ("name", "text", "(required)"), *[(n, t, None) for n, t, _ in expected()], ("clear", "text[]", [])]


def test_the_comparison_fails_when_sql_gains_a_setting(conn: Conn) -> None:
    conn.execute("create schema scratch")
    conn.execute("create function scratch.declare_topic(name text, max_attempts integer default 5,"
                 " max_sparkle integer default 1) returns void language sql as ''")
    assert [a[0] for a in arguments(conn, "scratch.declare_topic")] != ["name", *settings.NAMES]


@pytest.mark.parametrize("f", settings.SETTINGS, ids=settings.NAMES)
def test_each_bound_is_the_databases(conn: Conn, f: Any) -> None:
    """The range each setting of TopicSettings declares is the one declare_topic accepts."""
    low, high = f.low, f.high
    if low is None and high is None:
        pytest.skip("no range of its own")
    step = 1 if f.kind is int else timedelta(microseconds=1)
    company: dict[str, Any] = {"rate": 1} if f.name == "per" else {}
    for value in (low, high):
        if value is not None:
            brooq.declare_topic(conn, "t.bounds", **company, **{f.name: value})
    for value in (low - step if low is not None else None, high + step if high is not None else None):
        if value is not None:
            with pytest.raises(brooq.InvalidArgument, match=f"invalid {f.name} "):
                brooq.declare_topic(conn, "t.bounds", **company, **{f.name: value})


def test_every_setting_is_an_option_of_declare_topic_and_alter_topic() -> None:
    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices  # type: ignore[union-attr]
    for command in ("declare-topic", "alter-topic"):
        options = {o: a.dest for a in commands[command]._actions for o in a.option_strings}
        for f in settings.SETTINGS:
            assert options[f"--{f.name.replace('_', '-')}"] == f.name, (command, f.name)
            if f.kind is bool:
                assert options[f"--no-{f.name.replace('_', '-')}"] == f.name, (command, f.name)
    declared = {a.dest for a in commands["declare-topic"]._actions} - {"help", "dsn", "name"}
    assert declared == set(settings.NAMES)


NOT_DEFAULT = {
    "max_attempts": ("3", 3), "backoff_base": ("200ms", timedelta(milliseconds=200)),
    "backoff_max": ("90s", timedelta(seconds=90)), "retention": ("7d", timedelta(days=7)),
    "max_payload_bytes": ("4096", 4096), "notify": (None, False),
    "max_lease": ("10m", timedelta(minutes=10)), "max_lease_losses": ("2", 2),
    "max_in_flight": ("4", 4), "rate": ("10", 10), "per": ("2s", timedelta(seconds=2)),
    "max_execution": ("1h", timedelta(hours=1)), "retain_done": (None, False),
    "retain_payload": (None, False),
}


def non_default_options() -> list[str]:
    options = []
    for name, (text, _value) in NOT_DEFAULT.items():
        option = name.replace("_", "-")
        options += [f"--no-{option}"] if text is None else [f"--{option}", text]
    return options


def test_declare_topic_then_topic_round_trips_every_setting(db: str) -> None:
    assert set(NOT_DEFAULT) == set(settings.NAMES)
    done = cli("declare-topic", "reports", *non_default_options(), dsn=db)
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        "declared topic reports: max_attempts=3 backoff_base=200ms backoff_max=90s retention=7d"
        " max_payload_bytes=4096 notify=off max_lease=10m max_lease_losses=2 max_in_flight=4 rate=10"
        " per=2s max_execution=1h retain_done=off retain_payload=off\n")
    shown = cli("topic", "reports", "--json", dsn=db)
    assert shown.returncode == 0, shown.stderr
    row = json.loads(shown.stdout)
    for name, (_text, value) in NOT_DEFAULT.items():
        assert row[name] == (value.total_seconds() if isinstance(value, timedelta) else value), name
    table = cli("topic", "reports", dsn=db)
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].startswith("topic reports: paused no, declared ")
    assert lines[1].split() == ["setting", "value", "default"]
    assert [line.split() for line in lines[3:]][:2] == [["max_attempts", "3", "5"], ["backoff_base", "200ms", "1s"]]
    assert [line.split()[0] for line in lines[3:]] == list(settings.NAMES)


def test_declare_topic_takes_the_flow_limits_and_the_retention_policies(db: str, conn: Conn) -> None:
    done = cli("declare-topic", "mail", "--max-in-flight", "2", "--rate", "5", "--per", "1m",
               "--max-lease", "5m", "--max-lease-losses", "3", "--no-retain-done", "--no-retain-payload",
               dsn=db)
    assert done.returncode == 0, done.stderr
    row = conn.execute("select max_in_flight, rate, per, max_lease, max_lease_losses, retain_done,"
                       " retain_payload from brooq.topic where name = 'mail'").fetchone()
    assert row == (2, 5, timedelta(minutes=1), timedelta(minutes=5), 3, False, False)


def test_alter_topic_changes_only_what_it_names(db: str, conn: Conn) -> None:
    brooq.declare_topic(conn, "mail", max_attempts=7, max_in_flight=4, rate=10, per=timedelta(seconds=2),
                        max_lease=timedelta(minutes=10), max_lease_losses=2, retain_done=False,
                        retain_payload=False, max_execution=timedelta(hours=1))
    before = conn.execute("select * from brooq.topic where name = 'mail'").fetchone()
    done = cli("alter-topic", "mail", "--rate", "5", dsn=db)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("altered topic mail: max_attempts=7 ")
    assert " rate=5 per=2s " in done.stdout
    after = conn.execute("select * from brooq.topic where name = 'mail'").fetchone()
    columns = [c.name for c in conn.execute("select * from brooq.topic limit 0").description or ()]
    changed = {c for c, a, b in zip(columns, before, after, strict=True) if a != b}
    assert changed == {"rate", "updated_at"}
    cleared = cli("alter-topic", "mail", "--max-in-flight", "none", "--notify", "--no-retain-done", dsn=db)
    assert cleared.returncode == 0, cleared.stderr
    row = conn.execute("select max_in_flight, notify, retain_done, max_attempts from brooq.topic"
                       " where name = 'mail'").fetchone()
    assert row == (None, True, False, 7)


def test_alter_topic_refuses_as_declare_topic_and_needs_a_setting(db: str) -> None:
    nothing = cli("alter-topic", "mail", dsn=db)
    assert nothing.returncode == 2
    assert "name at least one setting" in nothing.stderr
    ghost = cli("alter-topic", "ghost", "--rate", "5", dsn=db)
    assert (ghost.returncode, ghost.stderr) == (1, 'brooq: error: topic "ghost" does not exist [42704 undefined_object];'
                                                   " hint: declare it with brooq declare-topic ghost (brooq stats lists"
                                                   " the topics)\n")
    cli("declare-topic", "mail", dsn=db)
    bad = cli("alter-topic", "mail", "--max-attempts", "0", dsn=db)
    assert bad.returncode == 1
    assert bad.stderr.startswith('brooq: error: invalid max_attempts 0 for topic "mail" [22023 invalid_parameter_value]')


def test_topic_of_an_unknown_name(db: str) -> None:
    done = cli("topic", "ghost", dsn=db)
    assert (done.returncode, done.stderr) == (1, "brooq: error: topic ghost does not exist\n")


def test_the_admin_reads_a_topics_settings(db: str, conn: Conn) -> None:
    """brooq_admin may read brooq.topics (the table brooq.topic stays private)."""
    brooq.declare_topic(conn, "mail", rate=3)
    conn.execute("set role brooq_admin")
    assert conn.execute("select rate, per from brooq.topics where name = 'mail'").fetchone() == (
        3, timedelta(seconds=1))
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute("select * from brooq.topic")


def test_the_python_helpers_take_and_return_topic_settings(conn: Conn) -> None:
    topic = brooq.declare_topic(conn, "mail", rate=3, retain_payload=False)
    assert topic.settings == brooq.TopicSettings(rate=3, per=timedelta(seconds=1), retain_payload=False)
    assert (topic.name, topic.paused) == ("mail", False)
    worker = brooq.Worker(conn.info.dsn)
    worker.handler("mail", max_in_flight=2, timeout=None)(lambda job: None)
    handler = worker._handlers["mail"]
    assert (handler.timeout, handler.settings) == (None, brooq.TopicSettings(max_in_flight=2))
    assert type(handler.settings) is brooq.TopicSettings
    with pytest.raises(TypeError):
        brooq.declare_topic(conn, "mail", max_sparkle=1)  # type: ignore[call-arg]
