"""Releases: an upgrade from @v0.1.0 keeps every job and lease, and reworks build right.

- A database on the released schema, with jobs in every state and one job held by
  a running 0.1.0 worker, is upgraded to HEAD by `sqitch deploy --verify` while
  that worker heartbeats; nothing changes, the holder settles its job, the catalog
  equals a fresh `sql/install.sql`, and `sqitch revert --to @v0.1.0` keeps every job.
- A synthetic rework of a function, in a copy of the tree, goes through sql/build
  and deploys three ways (install.sql, sqitch from empty, sqitch over the release)
  to one catalog, and reverts to the released one.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from brooq.tools.deploy import DeployError, deploy
from conftest import ROOT, Server, dump_schema, psql_file, sqitch, sqitch_target

RELEASE = "@v0.1.0"

# The statements a 0.1.0 worker sends (python/brooq/queries.py at the tag v0.1.0):
# the schema must keep answering them through an upgrade.
CLAIM_0_1_0 = """
select id, topic, payload, attempt, max_attempts, priority, lease_token, created_at
  from brooq.claim(worker => %s::text, topics => %s::text[], max_jobs => %s::integer,
                   lease => %s::interval)
"""
HEARTBEAT_0_1_0 = """
select id
  from brooq.heartbeat(worker => %s::text, job_ids => %s::bigint[], lease => %s::interval,
                       lease_tokens => %s::bigint[]) as h(id)
"""
SETTLE_MANY_0_1_0 = """
select id, state
  from brooq.settle_many(worker => %s::text, job_ids => %s::bigint[],
                         lease_tokens => %s::bigint[], outcomes => %s::text[],
                         errors => %s::text[], delays => %s::interval[],
                         results => %s::jsonb[])
"""

JOBS = "select * from brooq.job order by id"


def jobs_as_released(conn: psycopg.Connection[Any], cols: list[str]) -> list[tuple[Any, ...]]:
    """The job rows in the columns the release had (an upgrade may add columns)."""
    return conn.execute(sql.SQL("select {} from brooq.job order by id").format(
        sql.SQL(", ").join(map(sql.Identifier, cols)))).fetchall()


def fresh(server: Server) -> tuple[str, str]:
    """A new empty database: (name, dsn); the caller drops it."""
    name = f"brooq_rel_{uuid.uuid4().hex[:10]}"
    return name, server.create_db(name)


def fill_every_state(conn: psycopg.Connection[Any]) -> None:
    """Jobs in every state, on a released schema, through its own functions."""
    conn.execute("select brooq.declare_topic('up.work', max_attempts => 2, backoff_base => '1 hour', backoff_max => '1 hour')")
    conn.execute("select brooq.declare_topic('up.held', max_attempts => 3)")
    conn.execute("select * from brooq.enqueue('up.work', '{\"n\": 1}', idempotency_key => 'k-1')")
    conn.execute("select * from brooq.enqueue('up.work', '{\"n\": 2}', delay => '1 day')")
    conn.execute("select * from brooq.enqueue_many('up.work', array['{\"n\": 3}', '{\"n\": 4}', "
                 "'{\"n\": 5}', '{\"n\": 6}', '{\"n\": 7}']::jsonb[])")
    # claim three: one done (with a result), one failed (will retry), one canceled
    rows = conn.execute(CLAIM_0_1_0, ["old-worker", ["up.work"], 3, "30 seconds"]).fetchall()
    assert len(rows) == 3
    (a, _, _, _, _, _, ta, _), (b, *_, tb, _), (c, *_) = rows
    conn.execute(SETTLE_MANY_0_1_0, ["old-worker", [a, b], [ta, tb], ["done", "failed"],
                                     [None, "boom"], [None, None], ['{"ok": true}', None]])
    conn.execute("select brooq.cancel(%s)", [c])
    # one dead: a topic of one attempt, failed
    conn.execute("select brooq.declare_topic('up.dead', max_attempts => 1)")
    conn.execute("select * from brooq.enqueue('up.dead', '{}')")
    (d, *_, td, _), = conn.execute(CLAIM_0_1_0, ["old-worker", ["up.dead"], 1, "30 seconds"]).fetchall()
    conn.execute(SETTLE_MANY_0_1_0, ["old-worker", [d], [td], ["failed"], ["fatal"], [None], [None]])
    conn.execute("select * from brooq.enqueue('up.held', '{\"held\": true}')")


class OldWorker(threading.Thread):
    """A 0.1.0 worker holding one job, heartbeating every 0.2 s until told to settle."""

    def __init__(self, dsn: str) -> None:
        super().__init__(daemon=True)
        self.conn = psycopg.connect(dsn, autocommit=True)
        (self.job, *_, self.token, _), = self.conn.execute(
            CLAIM_0_1_0, ["old-worker", ["up.held"], 1, "3 seconds"]).fetchall()
        self.stop = threading.Event()
        self.beats = 0
        self.lost: list[object] = []

    def run(self) -> None:
        while not self.stop.wait(0.2):
            held = self.conn.execute(HEARTBEAT_0_1_0, ["old-worker", [self.job], "3 seconds",
                                                       [self.token]]).fetchall()
            self.beats += 1
            if held != [(self.job,)]:
                self.lost.append(held)

    def settle(self) -> list[tuple[Any, ...]]:
        self.stop.set()
        self.join(5)
        with self.conn:
            return self.conn.execute(SETTLE_MANY_0_1_0, ["old-worker", [self.job], [self.token],
                                                         ["done"], [None], [None], [None]]).fetchall()


def without_lease_deadline(rows: list[tuple[Any, ...]], cols: list[str]) -> list[tuple[Any, ...]]:
    """The rows with locked_until blanked: heartbeats move it, nothing else may change."""
    i = cols.index("locked_until")
    return [r[:i] + (None,) + r[i + 1:] for r in rows]


@pytest.mark.slow
def test_upgrade_from_the_release_keeps_every_job_and_lease(server: Server, empty_db: str) -> None:
    target = sqitch_target(empty_db)
    sqitch("deploy", "--verify", "--to", RELEASE, target)
    with psycopg.connect(empty_db, autocommit=True) as conn:
        assert conn.execute("select brooq.version()").fetchone() == ("0.1.0",)
        fill_every_state(conn)
        holder = OldWorker(empty_db)
        holder.start()
        cur = conn.execute(JOBS)
        cols = [d.name for d in cur.description or []]
        before = cur.fetchall()
        states = {r[cols.index("state")] for r in before}
        assert states == {"pending", "failed", "processing", "done", "dead", "canceled"}

        beats = holder.beats
        sqitch("deploy", "--verify", target)  # while the 0.1.0 worker heartbeats

        after = jobs_as_released(conn, cols)
        assert without_lease_deadline(after, cols) == without_lease_deadline(before, cols)
        # every topic of the release got the row brooq.claim locks for flow limits
        assert conn.execute("select count(*) from brooq.topic t where not exists "
                            "(select from brooq.flow_lock l where l.topic = t.name)").fetchone() == (0,)
        assert conn.execute("select count(*) from brooq.flow_lock").fetchone() == (3,)
        deadline = time.monotonic() + 10
        while holder.beats < beats + 3 and time.monotonic() < deadline:
            time.sleep(0.05)  # heartbeats on the upgraded schema
        assert holder.settle() == [(holder.job, "done")]
        assert holder.beats >= beats + 3 and holder.lost == [], "the held lease was lost"
        settled = jobs_as_released(conn, cols)
        from brooq import __version__
        assert conn.execute("select brooq.version()").fetchone() == (__version__,)

    name, install_dsn = fresh(server)
    try:
        psql_file(install_dsn, ROOT / "sql" / "install.sql")
        assert dump_schema(empty_db) == dump_schema(install_dsn), \
            "the upgraded catalog differs from a fresh sql/install.sql"
    finally:
        server.drop_db(name)

    sqitch("revert", "-y", "--to", RELEASE, target)
    with psycopg.connect(empty_db, autocommit=True) as conn:
        assert jobs_as_released(conn, cols) == settled, "revert to the release changed jobs"
        assert conn.execute("select brooq.version()").fetchone() == ("0.1.0",)
    name, release_dsn = fresh(server)
    try:
        sqitch("deploy", "--verify", "--to", RELEASE, sqitch_target(release_dsn))
        assert dump_schema(empty_db) == dump_schema(release_dsn), \
            "the reverted catalog differs from a fresh deploy of the release"
    finally:
        server.drop_db(name)


def test_synthetic_rework_deploys_every_way_to_one_catalog(server: Server, tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    for name in ("sqitch.plan", "sqitch.conf"):
        shutil.copy(ROOT / name, tree / name)
    for name in ("sql", "deploy", "revert", "verify"):
        shutil.copytree(ROOT / name, tree / name)
    change = not_reworked_since_the_release()  # sqitch reworks a change once per tag
    env = {**os.environ, "SQITCH_FULLNAME": "brooq tests", "SQITCH_EMAIL": "tests@brooq.invalid"}
    subprocess.run(["sqitch", "rework", change, "-n", "A synthetic rework."],
                   cwd=tree, env=env, check=True, capture_output=True)
    source = tree / "sql" / f"{change}.sql"
    text = source.read_text()
    function = text[text.index("create or replace function ") + len("create or replace function "):]
    function = function[:function.index("(") + 1]  # "brooq.cancel("
    source.write_text(text.replace("as $$\n", "as $$\n-- the reworked body\n", 1))
    done = subprocess.run([sys.executable, str(tree / "sql" / "build")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr

    install = (tree / "sql" / "install.sql").read_text()
    assert install.count(f"create or replace function {function}") == 1, \
        f"install.sql must hold {function}...) once"
    assert "the reworked body" in install

    dbs: dict[str, str] = {}
    try:
        for way in ("install", "empty", "upgrade", "release"):
            name, dbs[way] = fresh(server)
            dbs[way + ":name"] = name
        psql_file(dbs["install"], tree / "sql" / "install.sql")
        sqitch("deploy", "--verify", sqitch_target(dbs["empty"]), cwd=tree)
        sqitch("deploy", "--verify", "--to", RELEASE, sqitch_target(dbs["upgrade"]), cwd=tree)
        sqitch("deploy", "--verify", sqitch_target(dbs["upgrade"]), cwd=tree)
        sqitch("deploy", "--verify", "--to", RELEASE, sqitch_target(dbs["release"]), cwd=tree)
        reworked = dump_schema(dbs["install"])
        assert "the reworked body" in reworked
        assert dump_schema(dbs["empty"]) == reworked
        assert dump_schema(dbs["upgrade"]) == reworked
        sqitch("revert", "-y", "--to", RELEASE, sqitch_target(dbs["upgrade"]), cwd=tree)
        assert dump_schema(dbs["upgrade"]) == dump_schema(dbs["release"])
    finally:
        for key, name in dbs.items():
            if key.endswith(":name"):
                server.drop_db(name)


def not_reworked_since_the_release() -> str:
    """A function change of the release that no line after the tag reworks yet."""
    names = [line.split()[0] for line in (ROOT / "sqitch.plan").read_text().splitlines()
             if line[:1].isalpha()]
    return next(n for n in names if n.startswith("function_") and names.count(n) == 1)


def test_a_released_change_edited_in_place_is_refused(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    shutil.copy(ROOT / "sqitch.plan", tree / "sqitch.plan")
    for name in ("sql", "deploy", "revert"):
        shutil.copytree(ROOT / name, tree / name)
    change = not_reworked_since_the_release()
    source = tree / "sql" / f"{change}.sql"
    source.write_text(source.read_text().replace("as $$\n", "as $$\n-- edited in place\n", 1))
    done = subprocess.run([sys.executable, str(tree / "sql" / "build")], capture_output=True, text=True)
    assert done.returncode == 1
    assert f"sqitch rework {change}" in done.stderr


def test_psql_deploy_installs_once_and_refuses_to_upgrade(server: Server, empty_db: str) -> None:
    first = deploy(empty_db, method="psql")
    assert first.method == "psql"
    again = deploy(empty_db, method="psql")
    assert "already installed: nothing to do" in again.output

    name, old = fresh(server)
    try:
        sqitch("deploy", "--verify", "--to", RELEASE, sqitch_target(old))
        with pytest.raises(DeployError, match=r"holds brooq schema 0\.1\.0.*upgrading needs sqitch"):
            deploy(old, method="psql")
        with psycopg.connect(old) as conn:
            assert conn.execute("select brooq.version()").fetchone() == ("0.1.0",)
    finally:
        server.drop_db(name)


def test_sqitch_deploy_adopts_a_release_installed_without_sqitch(server: Server, empty_db: str) -> None:
    # A release installed by its install.sql: the released catalog, no sqitch registry.
    sqitch("deploy", "--verify", "--to", RELEASE, sqitch_target(empty_db))
    with psycopg.connect(empty_db, autocommit=True) as conn:
        conn.execute("drop schema sqitch cascade")
        conn.execute("select brooq.declare_topic('adopted')")
        conn.execute("select * from brooq.enqueue('adopted', '{}')")
    done = deploy(empty_db, method="sqitch")
    assert "+ function_version" in done.output
    with psycopg.connect(empty_db) as conn:
        from brooq import __version__
        assert conn.execute("select brooq.version()").fetchone() == (__version__,)
        assert conn.execute("select count(*) from brooq.job").fetchone() == (1,)


def test_a_worker_refuses_a_schema_older_than_its_package(empty_db: str) -> None:
    import brooq

    sqitch("deploy", "--verify", "--to", RELEASE, sqitch_target(empty_db))
    worker = brooq.Worker(empty_db, concurrency=1)

    @worker.handler("old.schema")
    def handle(job: brooq.Job) -> None:
        raise AssertionError("no job may run on a schema the worker refused")

    with pytest.raises(brooq.SchemaMismatch) as refused:
        worker.run()
    message = str(refused.value)
    assert f"the brooq schema is 0.1.0, older than package {brooq.__version__}" in message
    assert "brooq deploy" in message


def test_cli_read_commands_explain_a_schema_older_than_the_package(empty_db: str) -> None:
    from brooq import __version__
    from helpers import brooq_cli

    sqitch("deploy", "--verify", "--to", RELEASE, sqitch_target(empty_db))
    with psycopg.connect(empty_db, autocommit=True) as conn:
        conn.execute("select brooq.declare_topic('old.schema')")
        conn.execute("select * from brooq.enqueue('old.schema', '{}')")
    for command in (["jobs"], ["job", "1"], ["stats"], ["topic", "old.schema"], ["health"],
                    ["enqueue", "old.schema", "{}"]):
        done = brooq_cli(*command, dsn=empty_db)
        assert done.returncode == 1, (command, done.stdout)
        # was: brooq: error: column "..." does not exist [42703 undefined_column]
        assert done.stderr == (
            f"brooq: error: the brooq schema is 0.1.0, older than package {__version__}: "
            "run `brooq deploy --dsn ...` (schema first, then workers; docs/operations.md, "
            "Upgrading)\n"), (command, done.stderr)


@pytest.mark.parametrize(("package", "schema", "ok"), [
    ("0.2.0", "0.2.0", True), ("0.2.0.dev0", "0.2.0.dev0", True), ("0.2.3", "0.2.0", True),
    ("0.1.0", "0.2.0", True),  # schema first, then workers: an older worker keeps working
    ("0.2.0", "0.1.0", False), ("0.2.0.dev0", "0.1.0", False), ("1.0.0", "0.9.0", False),
    ("0.9.0", "1.0.0", False),
])
def test_the_compatibility_rule(package: str, schema: str, ok: bool) -> None:
    from brooq.schema_check import compatible

    assert compatible(package, schema) is ok


def test_package_and_schema_versions_agree() -> None:
    from brooq import __version__

    text = (ROOT / "sql" / "function_version.sql").read_text()
    assert f"select '{__version__}'::text" in text
    done = subprocess.run([sys.executable, "-m", "brooq.tools.cli", "--version"], capture_output=True,
                          text=True, check=True)
    assert done.stdout.strip() == f"brooq {__version__}"
