"""Backups and restores (docs/operations.md, "Backups, restores and failover").

A server of its own holds brooq in `appdb`, deployed by an owner that is not a
superuser, with jobs in every state (pending with a key, scheduled, failed and
waiting, processing under a live lease and under an expired one, done, dead,
canceled, an ordered group, a flow-limited topic), a periodic job and the pg_cron
maintenance, and two logins with passwords (a producer, a worker). Then:

- pg_dumpall --globals-only and pg_dump -Fc, restored with psql and pg_restore
  --create on the server emptied of the database and the roles (what a new server
  lacks): every job row, the catalog, the owner and the pg_cron jobs come back;
  restoring before the roles fails at the first one. A copy beside the live
  database (pg_restore -L without pg_cron) restores too.
- The owner deploys into pg_cron's database and rewrites a 0.1.0 reap job (the
  deploy script called cron.alter_job, which pg_cron grants to nobody).
- A base backup (pg_basebackup) and the WAL archive, restored to a target time:
  what was committed before the target is there, after it is not.

After each restore the queue works: the logins connect with their passwords and
keep their rights, enqueues get new ids, a key returns its job, claims respect
groups and flow limits, the expired lease is reaped at once by pg_cron's command,
the live one once it runs out, purge deletes what is due, and a schedule's tick
that ran before the backup enqueues nothing again.

Every shell command is the text docs/operations.md shows (checked below), run with
PGHOST, PGPORT and PGUSER naming the server, and /backup standing for a temporary
directory.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from conftest import ROOT, dump_schema
from pgcluster import Cluster, bindir, has_pg_cron

Conn = psycopg.Connection[tuple[Any, ...]]

PG_CRON = has_pg_cron(bindir())

# docs/operations.md, "Backups, restores and failover": the commands, as shown there.
DUMP = """\
pg_dumpall --globals-only -f globals.sql
pg_dump -Fc -f appdb.dump appdb
"""
RESTORE_GLOBALS = "psql -d postgres -f globals.sql"
RESTORE = "pg_restore --create --exit-on-error -d postgres appdb.dump"
RESTORE_BESIDE = """\
pg_restore -l appdb.dump | grep -v -E 'EXTENSION (- )?pg_cron|SCHEMA cron|(TABLE DATA|SEQUENCE SET) cron ' > appdb.list
createdb appdb_copy
pg_restore -L appdb.list --exit-on-error -d appdb_copy appdb.dump
"""
ARCHIVE_SETTINGS = """\
archive_mode = on
archive_command = 'test ! -f /backup/wal/%f && cp %p /backup/wal/%f'
"""
BASE_BACKUP = "pg_basebackup -D /backup/base -X stream -c fast"
PITR = """\
cp -a /backup/base "$PGDATA"
touch "$PGDATA/recovery.signal"
cat >> "$PGDATA/postgresql.auto.conf" <<'EOF'
restore_command = 'cp /backup/wal/%f %p'
recovery_target_time = '2026-12-01 14:02:00+00'
recovery_target_action = 'promote'
EOF
pg_ctl -w -l "$PGDATA/restore.log" start
"""
EXAMPLE_TARGET = "2026-12-01 14:02:00+00"
# ... and the checklist after a restore
HEALTH = "select name, status from brooq.health() where status <> 'ok';"
CRON_JOBS = "select jobname, database, username, active from cron.job where jobname like 'brooq%' order by jobname;"

# The logins of the test's servers (pg_hba asks them for their passwords).
OWNER, PRODUCER, WORKER = "brooq_owner", "app", "app_worker"
PASSWORDS = {OWNER: "owner-secret", PRODUCER: "app-secret", WORKER: "worker-secret",
             "stranger": "stranger-secret"}

JOBS = "select * from brooq.job order by id"
NEVER = "0 0 31 2 *"


def test_the_commands_are_the_ones_operations_md_shows() -> None:
    doc = (ROOT / "docs" / "operations.md").read_text()
    section = doc[doc.index("## Backups, restores and failover"):]
    section = section[:section.index("\n## ", 1)] if "\n## " in section[1:] else section
    for block in (DUMP, RESTORE_GLOBALS, RESTORE, RESTORE_BESIDE, ARCHIVE_SETTINGS, BASE_BACKUP, PITR,
                  HEALTH, CRON_JOBS):
        assert block.strip() in section, f"docs/operations.md no longer shows:\n{block}"


# --- servers --------------------------------------------------------------------

def new_server(**settings: str) -> Cluster:
    """A cluster of the test's own: pg_cron in appdb, passwords asked of everyone but postgres."""
    if PG_CRON:
        settings = {"cron.database_name": "appdb", **settings}
    cluster = Cluster(settings=settings, durable=False).start()
    hba = cluster.data / "pg_hba.conf"
    hba.write_text("host all postgres 127.0.0.1/32 trust\n"
                   "host all all 127.0.0.1/32 scram-sha-256\n" + hba.read_text())
    with psycopg.connect(cluster.dsn, autocommit=True) as conn:
        conn.execute("select pg_reload_conf()")
    return cluster


def dsn(cluster: Cluster, dbname: str = "appdb", user: str = "postgres") -> str:
    return psycopg.conninfo.make_conninfo(cluster.dsn_for(dbname), user=user,
                                          password=PASSWORDS.get(user))


def shell(script: str, cluster: Cluster, cwd: Path, *, backup: Path | None = None,
          pgdata: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run a script of docs/operations.md against the cluster: PGHOST, PGPORT and PGUSER
    name it, /backup is `backup`; as the postgres OS user when we are root (the files
    of a base backup and of the archive belong to the server's user)."""
    if backup is not None:
        script = script.replace("/backup", str(backup))
    env = {"PGHOST": "127.0.0.1", "PGPORT": str(cluster.port), "PGUSER": "postgres",
           "PATH": f"{cluster.bin}:{os.environ['PATH']}", "LC_ALL": "C.UTF-8"}
    if pgdata is not None:
        env["PGDATA"] = str(pgdata)
    argv = ["bash", "-euo", "pipefail", "-c", script]
    if os.geteuid() == 0:
        argv = ["runuser", "-u", "postgres", "--", "env", *(f"{k}={v}" for k, v in env.items()), *argv]
        env = dict(os.environ)
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False)


def ok(done: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert done.returncode == 0, f"{done.args}\nstdout: {done.stdout}\nstderr: {done.stderr}"
    return done


@pytest.fixture
def workdir() -> Iterator[Path]:
    """A directory the postgres OS user may write (pytest's tmp_path is root's only)."""
    path = Path(tempfile.mkdtemp(prefix="brooq-backup-"))
    if os.geteuid() == 0:
        shutil.chown(path, "postgres")
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


# --- the database before the backup ---------------------------------------------

def deploy(cluster: Cluster) -> None:
    """appdb, brooq deployed by a non-superuser owner (docs/security.md), two logins."""
    with psycopg.connect(cluster.dsn, autocommit=True) as conn:
        conn.execute("create role brooq_owner login createrole password 'owner-secret'")
        conn.execute("create database appdb")
        conn.execute("grant create on database appdb to brooq_owner")
    with psycopg.connect(dsn(cluster), autocommit=True) as conn:
        if PG_CRON:
            conn.execute("create extension pg_cron")
            conn.execute("grant usage on schema cron to brooq_owner")
    psql_as_owner(cluster, ROOT / "sql" / "install.sql")  # (into pg_cron's database: see below)
    if PG_CRON:
        rewrite_the_0_1_0_reap_job(cluster)
    with psycopg.connect(dsn(cluster), autocommit=True) as conn:
        conn.execute("create role app login password 'app-secret'")
        conn.execute("create role app_worker login password 'worker-secret'")
        conn.execute("alter role app_worker set statement_timeout = '15s'")
        conn.execute("grant brooq_producer to app")
        conn.execute("grant brooq_worker to app_worker")


def psql_as_owner(cluster: Cluster, path: Path) -> None:
    done = subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", dsn(cluster, user=OWNER),
                           "-f", str(path)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def rewrite_the_0_1_0_reap_job(cluster: Cluster) -> None:
    """brooq 0.1.0's reap job ran `select count(*) ...` (count through the search_path);
    the change function_schedule_maintenance rewrites it, here deployed by the
    non-superuser owner, whose job it is. Its deploy script used to call
    cron.alter_job, which pg_cron grants to nobody, unconditionally: such an owner
    could neither install into pg_cron's database nor upgrade there."""
    with psycopg.connect(dsn(cluster, user=OWNER), autocommit=True) as owner:
        jobid = one(owner, "select cron.schedule('brooq_reap', %s, 'select count(*) from brooq.reap(10000)')",
                    [NEVER])
        psql_as_owner(cluster, ROOT / "deploy" / "function_schedule_maintenance.sql")
        assert owner.execute("select jobid, command from cron.job where jobname = 'brooq_reap'").fetchall() \
            == [(jobid, "select pg_catalog.count(*) from brooq.reap(10000)")]


def one(conn: Conn, query: str, params: list[Any] | None = None) -> Any:
    row = conn.execute(query, params).fetchone()
    assert row is not None
    return row[0] if len(row) == 1 else row


def fill(cluster: Cluster) -> dict[str, int]:
    """Jobs in every state, a periodic job and the pg_cron maintenance; the ids by name."""
    ids: dict[str, int] = {}
    with psycopg.connect(dsn(cluster), autocommit=True) as conn:
        conn.execute("select brooq.declare_topic('mail', retention => '7 days')")
        conn.execute("select brooq.declare_topic('work', max_attempts => 3, backoff_base => '1 hour', "
                     "backoff_max => '1 hour', retention => '7 days')")
        conn.execute("select brooq.declare_topic('work.once', max_attempts => 1, retention => '7 days')")
        conn.execute("select brooq.declare_topic('ordered')")
        conn.execute("select brooq.declare_topic('limited', max_in_flight => 1, rate => 100, per => '1 minute')")
        ids["keyed"] = one(conn, "select id from brooq.enqueue('mail', '{\"order\": 1}', idempotency_key => 'order-1')")
        ids["scheduled"] = one(conn, "select id from brooq.enqueue('mail', '{\"order\": 2}', delay => '1 day')")
        # an expired lease: claimed an hour ago for a minute, its worker gone since
        conn.execute("select set_config('brooq.now', (clock_timestamp() - interval '1 hour')::text, false)")
        ids["expired"] = one(conn, "select id from brooq.enqueue('work', '{\"n\": 0}')")
        assert one(conn, "select id from brooq.claim('gone', array['work'], lease => '1 minute')") == ids["expired"]
        conn.execute("reset brooq.now")
        for name in ("done", "failed", "canceled", "held"):
            ids[name] = one(conn, "select id from brooq.enqueue('work', %s)", [f'{{"job": "{name}"}}'])
        claimed = conn.execute("select id, lease_token from brooq.claim('w1', array['work'], max_jobs => 4, "
                               "lease => '10 minutes')").fetchall()
        assert [r[0] for r in claimed] == [ids["done"], ids["failed"], ids["canceled"], ids["held"]]
        tokens: dict[int, int] = dict(claimed)
        assert one(conn, "select brooq.settle(%s, 'w1', %s, 'done', result => '{\"sent\": true}')",
                   [ids["done"], tokens[ids["done"]]]) == "done"
        assert one(conn, "select brooq.settle(%s, 'w1', %s, 'failed', error => 'smtp down')",
                   [ids["failed"], tokens[ids["failed"]]]) == "failed"
        assert one(conn, "select brooq.cancel(%s)", [ids["canceled"]]) is True
        ids["held_token"] = tokens[ids["held"]]
        ids["dead"] = one(conn, "select id from brooq.enqueue('work.once', '{}')")
        token = one(conn, "select lease_token from brooq.claim('w1', array['work.once'])")
        assert one(conn, "select brooq.settle(%s, 'w1', %s, 'failed', error => 'fatal')",
                   [ids["dead"], token]) == "dead"
        ids["first"] = one(conn, "select id from brooq.enqueue('ordered', '{}', group_key => 'cust-7')")
        ids["second"] = one(conn, "select id from brooq.enqueue('ordered', '{}', group_key => 'cust-7')")
        ids["limited_held"] = one(conn, "select id from brooq.enqueue('limited', '{}')")
        ids["limited_waiting"] = one(conn, "select id from brooq.enqueue('limited', '{}')")
        assert one(conn, "select id from brooq.claim('w1', array['limited'], lease => '10 minutes')") \
            == ids["limited_held"]
        if PG_CRON:
            # on February 31: pg_cron itself never runs them while the test does (a reap at
            # the turn of a minute would move the jobs under it); the test runs their commands
            conn.execute(f"select * from brooq.schedule_maintenance({NEVER!r}, {NEVER!r})")
            conn.execute(f"select brooq.schedule('nightly', {NEVER!r}, 'mail', '{{\"kind\": \"nightly\"}}')")
            conn.execute("set brooq.now = '2030-01-01 03:00:10+00'")
            ids["tick"] = one(conn, "select brooq._schedule_tick('nightly')")
            conn.execute("reset brooq.now")
        states = {r[0] for r in conn.execute("select state from brooq.job").fetchall()}
        assert states == {"pending", "failed", "processing", "done", "dead", "canceled"}
    return ids


def snapshot(cluster: Cluster) -> tuple[list[tuple[Any, ...]], str]:
    """Every job row, every column; and the catalog of the schema brooq, grants included."""
    with psycopg.connect(dsn(cluster), autocommit=True) as conn:
        return conn.execute(JOBS).fetchall(), dump_schema(dsn(cluster))


# --- the queue after a restore ---------------------------------------------------

def check_restored_queue(cluster: Cluster, ids: dict[str, int], before: list[tuple[Any, ...]]) -> None:
    """What a restored queue must do: docs/operations.md, the checklist after a restore.
    (ids["replayed"]: a job of topic mail enqueued after the backup was taken.)"""
    top = max(r[0] for r in before)
    with psycopg.connect(dsn(cluster), autocommit=True) as su:
        assert one(su, "select nspowner::regrole::text from pg_namespace where nspname = 'brooq'") == OWNER
        assert one(su, "select count(*) from pg_proc where pronamespace = 'brooq'::regnamespace "
                       "and proowner <> 'brooq_owner'::regrole") == 0

        # the producer: its password, its right, new ids, its key
        with psycopg.connect(dsn(cluster, user=PRODUCER), autocommit=True) as app:
            assert app.execute("select id, created from brooq.enqueue('mail', '{\"order\": 1}', "
                               "idempotency_key => 'order-1')").fetchall() == [(ids["keyed"], False)]
            new = [r[0] for r in app.execute("select id from brooq.enqueue_many('mail', "
                                             "array['{\"order\": 3}', '{\"order\": 4}']::jsonb[])").fetchall()]
            assert len(set(new)) == 2 and min(new) > top, f"ids {new} collide with the restored ones (<= {top})"
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                app.execute("select * from brooq.claim('app', array['mail'])")
        # a login with no brooq grant: still nothing (no privileges given back to PUBLIC)
        su.execute("create role stranger login password 'stranger-secret'")
        with psycopg.connect(dsn(cluster, user="stranger"), autocommit=True) as stranger:
            for call in ("select * from brooq.claim('s', array['mail'])", "select * from brooq.jobs",
                         "select * from brooq.enqueue('mail')"):
                with pytest.raises(psycopg.errors.InsufficientPrivilege):
                    stranger.execute(call)

        # the worker: its password, its role's settings, claims in order, groups, flow limits
        with psycopg.connect(dsn(cluster, user=WORKER), autocommit=True) as worker:
            assert one(worker, "show statement_timeout") == "15s"
            claimed = worker.execute("select id, lease_token from brooq.claim('w2', array['mail'], max_jobs => 10)"
                                     ).fetchall()
            ready = [ids["keyed"], *([ids["replayed"]] if "replayed" in ids else []), *new]
            assert [r[0] for r in claimed] == ready  # the scheduled job waits for its day
            settled = worker.execute("select id, state from brooq.settle_many('w2', %s, %s, %s)",
                                     [[r[0] for r in claimed], [r[1] for r in claimed], ["done"] * len(ready)]).fetchall()
            assert sorted(settled) == sorted((r[0], "done") for r in claimed)
            (first, token), = worker.execute("select id, lease_token from brooq.claim('w2', array['ordered'], "
                                             "max_jobs => 10)").fetchall()
            assert first == ids["first"]  # one job of the group at a time
            assert one(worker, "select brooq.settle(%s, 'w2', %s, 'done')", [first, token]) == "done"
            assert [r[0] for r in worker.execute("select id from brooq.claim('w2', array['ordered'])")] \
                == [ids["second"]]
            assert worker.execute("select id from brooq.claim('w2', array['limited'])").fetchall() == [], \
                "max_in_flight 1 is held by the job processing at the backup"

            # leases: the expired one goes back at once, by pg_cron's own command when there is one
            assert ("expired_leases", "fail") in su.execute(HEALTH).fetchall()
            if PG_CRON:
                assert su.execute(CRON_JOBS).fetchall() == [
                    (n, "appdb", OWNER, True) for n in ("brooq_purge", "brooq_reap", "brooq_schedule.nightly")]
                command: dict[str, str] = dict(su.execute("select jobname, command from cron.job").fetchall())
                with psycopg.connect(dsn(cluster, user=OWNER), autocommit=True) as owner:
                    assert one(owner, command["brooq_reap"]) == 1
                    owner.execute(command["brooq_purge"])
            else:
                assert worker.execute("select id from brooq.reap()").fetchall() == [(ids["expired"],)]
            expired = su.execute("select state, attempts, locked_by from brooq.job where id = %s",
                                 [ids["expired"]]).fetchone()
            assert expired == ("pending", 1, None)
            # the live lease is left alone until it runs out, then reaped (attempts kept)
            assert su.execute("select state, locked_by from brooq.job where id = %s",
                              [ids["held"]]).fetchone() == ("processing", "w1")
            until = one(su, "select locked_until from brooq.job where id = %s", [ids["held"]])
            su.execute("select set_config('brooq.now', (%s + interval '1 minute')::text, false)", [until])
            reaped = {r[0] for r in su.execute("select id from brooq.reap()").fetchall()}
            assert {ids["held"], ids["limited_held"]} <= reaped
            su.execute("reset brooq.now")
            assert su.execute("select state, attempts from brooq.job where id = %s",
                              [ids["held"]]).fetchone() == ("pending", 1)

        # purge: what is due goes (here: a week on), the active jobs stay
        terminal = one(su, "select count(*) from brooq.job where state in ('done', 'dead', 'canceled') "
                           "and topic <> 'ordered'")
        su.execute("select set_config('brooq.now', (clock_timestamp() + interval '8 days')::text, false)")
        su.execute("call brooq.purge_all()")
        su.execute("reset brooq.now")
        assert one(su, "select count(*) from brooq.job where state in ('done', 'dead', 'canceled') "
                       "and topic <> 'ordered'") == 0 < terminal
        assert one(su, "select count(*) from brooq.job where state in ('pending', 'failed', 'processing')") > 0

        if PG_CRON:  # the tick that ran before the backup finds its job: nothing enqueued twice
            su.execute("set brooq.now = '2030-01-01 03:00:40+00'")
            assert one(su, "select brooq._schedule_tick('nightly')") == ids["tick"]
            su.execute("reset brooq.now")


# --- pg_dump / pg_restore -----------------------------------------------------------

def test_a_dump_restores_on_a_new_server_and_the_queue_works(workdir: Path) -> None:
    server = new_server()
    try:
        deploy(server)
        ids = fill(server)
        before, catalog = snapshot(server)
        ok(shell(DUMP, server, workdir))
        # the database and the roles gone: what a new server lacks (a second initdb
        # would prove no more and cost seconds)
        with psycopg.connect(server.dsn, autocommit=True) as conn:
            conn.execute("drop database appdb with (force)")
            conn.execute("drop role app, app_worker, brooq_admin, brooq_producer, brooq_worker, brooq_owner")

        # the roles first: the dump's owners and grants name them
        early = shell(RESTORE, server, workdir)
        assert early.returncode == 1 and 'role "brooq_owner" does not exist' in early.stderr, early.stderr
        with psycopg.connect(server.dsn, autocommit=True) as conn:
            # what the failed restore created; pg_cron's launcher may have connected to it
            conn.execute("drop database appdb with (force)")

        globs = ok(shell(RESTORE_GLOBALS, server, workdir))
        errors = [line for line in globs.stderr.splitlines() if "ERROR" in line]
        assert [e.split("ERROR:", 1)[1].strip() for e in errors] == ['role "postgres" already exists']
        ok(shell(RESTORE, server, workdir))

        after, restored_catalog = snapshot(server)
        assert after == before, "a job row differs after the restore"
        assert restored_catalog == catalog, "the schema brooq differs after the restore"
        check_restored_queue(server, ids, before)

        # a copy beside the live database: without pg_cron, whose jobs stay appdb's
        ok(shell(RESTORE_BESIDE, server, workdir))
        with psycopg.connect(dsn(server, "appdb_copy"), autocommit=True) as copy:
            assert copy.execute(JOBS).fetchall() == before
            assert copy.execute("select name from brooq.schedules").fetchall() == ([("nightly",)] if PG_CRON else [])
            if PG_CRON:
                with pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState):
                    copy.execute("select * from brooq.schedule_maintenance()")
                assert one(copy, "select count(*) from pg_extension where extname = 'pg_cron'") == 0
        if PG_CRON:
            with psycopg.connect(dsn(server), autocommit=True) as conn:
                assert one(conn, "select count(*) from cron.job where database <> 'appdb'") == 0
    finally:
        server.stop()


# --- base backup + WAL archive, restored to a point in time ----------------------------

def wait_for(check: Any, what: str, timeout: float = 30) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := check()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)
    return value


@pytest.mark.slow
def test_a_base_backup_restores_to_a_point_in_time_and_the_queue_works(workdir: Path) -> None:
    (workdir / "wal").mkdir()
    if os.geteuid() == 0:
        shutil.chown(workdir / "wal", "postgres")
    settings = re.findall(r"^(\w+) = '?(.*?)'?$", ARCHIVE_SETTINGS.replace("/backup", str(workdir)), re.MULTILINE)
    server = new_server(**dict(settings))
    pgdata = workdir / "restored"
    try:
        deploy(server)
        ids = fill(server)
        ok(shell(BASE_BACKUP, server, workdir, backup=workdir))
        before, catalog = snapshot(server)

        with psycopg.connect(dsn(server), autocommit=True) as conn:
            # after the base backup, before the target: replayed from the archive
            ids["replayed"] = one(conn, "select id from brooq.enqueue('mail', '{\"order\": 5}', "
                                        "idempotency_key => 'order-5')")
            replayed = conn.execute("select * from brooq.job where id = %s", [ids["replayed"]]).fetchall()
            target = one(conn, "select clock_timestamp()::text")
            # after the target: an enqueue and an outcome, both lost by the restore
            lost = one(conn, "select id from brooq.enqueue('mail', '{\"order\": 6}', idempotency_key => 'order-6')")
            assert one(conn, "select brooq.settle(%s, 'w1', %s, 'done')", [ids["held"], ids["held_token"]]) == "done"
            segment = one(conn, "select pg_walfile_name(pg_switch_wal())")
            wait_for(lambda: one(conn, "select coalesce(last_archived_wal, '') from pg_stat_archiver") >= segment,
                     f"WAL segment {segment} in the archive")
        server.pg_ctl("stop", "-m", "immediate", "-w")  # the server is lost

        # the restore takes its place (port and sockets come with the base backup)
        script = PITR.replace(EXAMPLE_TARGET, target)
        ok(shell(script, server, workdir, backup=workdir, pgdata=pgdata))
        with psycopg.connect(dsn(server), autocommit=True) as conn:
            wait_for(lambda: one(conn, "select not pg_is_in_recovery()"), "the end of recovery")
            log = (pgdata / "restore.log").read_text()
            assert re.search(r"recovery stopping before commit of transaction \d+, time ", log), log
            assert conn.execute("select * from brooq.job where id = %s", [ids["replayed"]]).fetchall() == replayed
            assert conn.execute("select count(*) from brooq.job where id = %s or idempotency_key = 'order-6'",
                                [lost]).fetchone() == (0,), "a job enqueued after the target came back"
            assert conn.execute("select * from brooq.job where id <> %s order by id",
                                [ids["replayed"]]).fetchall() == before
        assert dump_schema(dsn(server)) == catalog
        check_restored_queue(server, ids, before)
        with psycopg.connect(dsn(server, user=PRODUCER), autocommit=True) as app:  # sent again, same key
            (again, created), = app.execute("select id, created from brooq.enqueue('mail', '{\"order\": 6}', "
                                            "idempotency_key => 'order-6')").fetchall()
            assert created and again != lost
    finally:
        subprocess.run(["runuser", "-u", "postgres", "--"] * (os.geteuid() == 0)
                       + [str(server.bin / "pg_ctl"), "-D", str(pgdata), "stop", "-m", "immediate"],
                       capture_output=True, check=False)
        server.stop()
