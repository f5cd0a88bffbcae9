"""Failover to a streaming standby: a primary killed mid-run, its standby promoted, real
`brooq worker` processes and a producer on a multi-host DSN, the history judged by the
chaos checker (tests/chaos/failover.py; docs/reliability.md, "Across a failover").

The synchronous run is in the normal suite (~20 s); the asynchronous one, four
failovers and pg_cron's own runs on the last primary (~2 min), is `-m long`:

    bash tests/run -m long tests/test_failover.py -s

BROOQ_CHAOS_SEED=<n> replays a seed's job mix (each run prints its seed; a failing test
keeps its run directory, /tmp/brooq-failover-<seed>-*: history.json, report.txt, every
server's and worker's log; a passing one removes it).
"""

from __future__ import annotations

import math
import os
import random
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import brooq
import psycopg
import pytest
from brooq.listener import RECONNECT_MAX
from chaos.failover import FailoverConfig, run
from chaos.harness import Result
from brooq.tools.deploy import deploy
from helpers import COMMAND, FAST, declare, enqueue, fate, running, wait_for
from pgcluster import Cluster, bindir, free_port, has_pg_cron


def seed() -> int:
    env = os.environ.get("BROOQ_CHAOS_SEED")
    return int(env) if env else random.SystemRandom().randrange(2**31)


def where(result: Result) -> str:
    return f"seed {result.config.seed}, run directory {result.run_dir}\n{result.report.summary()}"


def passed(result: Result) -> None:
    """After a test's last assertion: its run directory goes (a failing test keeps it)."""
    shutil.rmtree(result.run_dir, ignore_errors=True)


def reconnect_bound(outage: float) -> float:
    """A worker's reconnect backoff (brooq.listener.backoff, jittered by 0.5-1.0) doubles
    from 0.1 s: the try after the promotion comes at most twice the time waited so far
    plus 0.1 s later, and never more than RECONNECT_MAX. From the loss: the outage plus
    that, plus 0.5 s for a loaded machine."""
    return outage + min(2 * outage + 0.1, RECONNECT_MAX) + 0.5


def assert_workers_resumed(result: Result, failovers: int, workers: int) -> None:
    f = result.report.figures
    for i in range(1, failovers + 1):
        assert f[f"failover{i}_workers_reconnected"] == workers, where(result)
        outage = f[f"failover{i}_promote_s"]
        assert f[f"failover{i}_reconnect_max_s"] <= reconnect_bound(outage), where(result)
        assert math.isfinite(f[f"failover{i}_first_done_after_kill_s"]), where(result)


def assert_maintenance_ran(result: Result) -> None:
    f = result.report.figures
    assert f["ghost_reaped"] == 1, where(result)  # an expired lease planted on the new primary: reaped
    assert f["old_rows_left"] == 0, where(result)  # old terminal jobs planted there: purged
    assert f["pg_cron_scheduler"] == int(has_pg_cron(bindir())), where(result)


@pytest.mark.slow
def test_a_synchronous_standby_promoted_after_a_kill_keeps_every_acknowledged_enqueue_and_outcome() -> None:
    """Synchronous replication, two failovers: the first under load (enqueues and settles
    in flight), the second right after claims that the standby never received (the
    queue drained, probe jobs claimed, the primary killed while their handlers run).
    Every enqueue the producer saw committed and every outcome a worker saw committed
    is on the last primary; each job ends once, its outcome from a finished execution
    under its current lease; the lost claims were jobs ready again (claimed anew,
    their old attempts' settles refused); every worker reconnected within the backoff's
    bound; the workers' reap and purge_all (pg_cron's command) ran on the new primary."""
    result = run(FailoverConfig(seed=seed(), jobs=300, rate=60.0, workers=3, sync=True, failovers=2))
    r, f = result.report, result.report.figures
    print(f"\n{where(result)}")
    assert r.total == 0, where(result)  # lost, outcome_lost and every chaos class: zero
    assert f["jobs_acked"] >= 300 and f["jobs_done"] + f["jobs_dead"] >= f["jobs_acked"], where(result)
    assert f["outcomes_acknowledged"] >= 300, where(result)
    assert f["claims_lost_in_failover"] >= 1, where(result)  # the second failover took claims away
    assert_workers_resumed(result, failovers=2, workers=3)
    assert_maintenance_ran(result)
    passed(result)


@pytest.mark.long
@pytest.mark.timeout(1800)
def test_an_asynchronous_standby_loses_only_what_it_never_received() -> None:
    """Asynchronous replication, four failovers (two under load, two after unflushed
    claims), 3,000 jobs: what is lost is counted (acknowledged enqueues missing or whose
    id went to another job, acknowledged outcomes whose jobs then ran again), and
    nothing else breaks: no stale outcome, no unexplained re-execution, no illegal
    transition. pg_cron's own reap and purge run on the last primary."""
    result = run(FailoverConfig(seed=seed(), jobs=3000, rate=60.0, workers=3, sync=False, failovers=4,
                                pg_cron_wait=True, drain_timeout=120.0))
    r, f = result.report, result.report.figures
    print(f"\n{where(result)}")
    others = {k: v for k, v in r.counts.items() if k not in ("lost", "outcome_lost")}
    assert not any(others.values()), where(result)
    assert f["claims_lost_in_failover"] >= 1, where(result)
    assert_workers_resumed(result, failovers=4, workers=3)
    assert f["ghost_reaped"] == 1 and f["old_rows_left"] == 0, where(result)
    if has_pg_cron(bindir()):
        assert f["pg_cron_reap_runs"] >= 1 and f["pg_cron_purge_runs"] >= 1, where(result)
    passed(result)


@pytest.mark.slow
def test_a_settle_refused_by_a_read_only_database_is_written_later_unchanged(db: str) -> None:
    """A switchover makes the primary read-only before the standby takes over
    (default_transaction_read_only, or a standby reached without target_session_attrs):
    a settle then fails with 25006 read_only_sql_transaction. That is the server, not the
    outcome: the settling thread keeps the outcome and retries on a new connection, and
    once the database takes writes the job is done. (It used to be taken for a value
    the database refused: done was rewritten as failed, "cannot settle done: cannot
    execute UPDATE in a read-only transaction", and with no attempt left the job went
    dead; a failed outcome was dropped as if its lease were lost.)"""
    declare(db, "ro", max_attempts=1)
    release = threading.Event()
    worker = brooq.Worker(db, name="ro", concurrency=2, **FAST)

    @worker.handler("ro", max_attempts=1, timeout=None)
    def handle(job: brooq.Job) -> dict[str, Any]:
        release.wait(10)
        return {"ok": job.payload["n"]}

    name = psycopg.conninfo.conninfo_to_dict(db)["dbname"]
    with psycopg.connect(db, autocommit=True) as admin, running(worker):
        jobs = enqueue(admin, "ro", 3)
        wait_for(lambda: all(fate(admin, j).state == "processing" for j in jobs), what="the claims")
        # new sessions read-only: the settling thread's first connection (opened at the first
        # settle); the loop's own, opened before, still claims and heartbeats
        admin.execute(f'alter database "{name}" set default_transaction_read_only = on')
        release.set()
        time.sleep(1.5)  # the settle fails with 25006, and again on each retry
        assert [fate(admin, j).state for j in jobs] == ["processing"] * 3
        admin.execute(f'alter database "{name}" reset default_transaction_read_only')
        wait_for(lambda: all(fate(admin, j).state == "done" for j in jobs), timeout=10,
                 what="the settles once the database takes writes")
    assert [fate(db, j).result for j in jobs] == [{"ok": n} for n in (1, 2, 3)]


def test_a_settle_canceled_while_it_waits_for_a_lock_is_written_later_unchanged(db: str) -> None:
    """A settle can fail for a moment without the outcome being wrong: canceled (57014: the
    statement timeout, pg_cancel_backend), a deadlock (40P01), a lock wait (55P03), a
    serialization failure (40001). The settling thread keeps the outcome and writes it
    again. (It used to take them for a value the database refused: done was rewritten
    as failed, "cannot settle done: canceling statement due to user request", and a job
    with no attempt left went dead.)"""
    declare(db, "locked", max_attempts=1)
    release = threading.Event()
    worker = brooq.Worker(db, name="locked", concurrency=1, poll_interval=FAST["poll_interval"],
                          lease=timedelta(seconds=30))  # no heartbeat or timeout in the way

    @worker.handler("locked", max_attempts=1, timeout=None)
    def handle(job: brooq.Job) -> dict[str, Any]:
        release.wait(10)
        return {"ok": True}

    with psycopg.connect(db, autocommit=True) as admin, running(worker):
        job, = enqueue(admin, "locked", 1)
        wait_for(lambda: fate(admin, job).state == "processing", what="the claim")
        with psycopg.connect(db) as holder:  # the job's row locked, as a long report would
            holder.execute("select 1 from brooq.job where id = %s for update", [job])
            release.set()
            canceled = 0
            deadline = time.monotonic() + 4
            while time.monotonic() < deadline:  # cancel every write of the outcome that waits
                row = admin.execute(
                    "select pg_cancel_backend(pid) from pg_stat_activity where wait_event_type = 'Lock'"
                    " and application_name = 'brooq worker locked'").fetchone()
                canceled += bool(row and row[0])
                time.sleep(0.05)
            assert canceled >= 2, canceled  # the outcome was written again after a cancel
            assert fate(admin, job).state == "processing"
        wait_for(lambda: fate(admin, job).state != "processing", timeout=10, what="the settle")
        assert (fate(admin, job).state, fate(admin, job).result) == ("done", {"ok": True})


# --- a starting worker behind a multi-host DSN ---------------------------------------

WORKER_PASSWORD = "worker-secret-7f3a"
APP = Path(__file__).with_name("worker_app.py")


@pytest.fixture(scope="module")
def guarded() -> Iterator[Cluster]:
    """A cluster of the test's own whose pg_hba asks every login but postgres for its
    password, with brooq deployed and a login ``app_worker`` (brooq_worker)."""
    cluster = Cluster(durable=False).start()
    try:
        hba = cluster.data / "pg_hba.conf"
        hba.write_text("host all postgres 127.0.0.1/32 trust\n"
                       "host all all 127.0.0.1/32 scram-sha-256\n" + hba.read_text())
        with psycopg.connect(cluster.dsn, autocommit=True) as conn:
            conn.execute("select pg_reload_conf()")
            conn.execute("create database app")
        deploy(cluster.dsn_for("app"))
        with psycopg.connect(cluster.dsn_for("app"), autocommit=True) as conn:
            conn.execute(f"create role app_worker login password '{WORKER_PASSWORD}' in role brooq_worker")
            conn.execute("select brooq.declare_topic('sleep', max_attempts => 10)")
        yield cluster
    finally:
        cluster.stop()


def start_worker(dsn: str) -> subprocess.Popen[str]:
    """`brooq worker worker_app:from_env` on ``dsn`` (in the environment, not in argv),
    waiting for a database unreachable or starting up for start_timeout (5 minutes)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BROOQ_")} | {"BROOQ_DSN": dsn}
    return subprocess.Popen([*COMMAND, "worker", "worker_app:from_env", "--progress", "off"],
                            cwd=APP.parent, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)


@pytest.mark.slow
@pytest.mark.parametrize("refusal", ["password", "database"])
def test_a_definitive_refusal_behind_a_multi_host_dsn_stops_a_starting_worker_at_once(
        guarded: Cluster, refusal: str) -> None:
    """host=primary,standby with the primary down (nothing listens on its port) and the
    standby refusing the password, or the database: a worker started then stops at once,
    as it does when the standby is the DSN's only host, instead of waiting start_timeout
    (5 minutes) for a primary that would refuse it the same way. Its message names the
    refusal, never the password."""
    down = free_port()
    password, dbname, why = {
        "password": ("wrong-" + WORKER_PASSWORD, "app", 'password authentication failed for user "app_worker"'),
        "database": (WORKER_PASSWORD, "nope", 'database "nope" does not exist'),
    }[refusal]
    common = f"dbname={dbname} user=app_worker password={password} connect_timeout=5"
    for hosts in (f"host=127.0.0.1 port={guarded.port}",  # the standby alone
                  f"host=127.0.0.1,127.0.0.1 port={down},{guarded.port}",  # the primary down first
                  f"host=127.0.0.1,127.0.0.1 port={guarded.port},{down}"):  # and last
        proc = start_worker(f"{hosts} {common}")
        started = time.monotonic()
        try:
            out, _ = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
            raise AssertionError(f"{hosts}: the worker still waits after 20 s:\n{out}") from None
        took = time.monotonic() - started
        assert proc.returncode != 0 and "cannot connect to the database" in out and why in out, (hosts, out)
        assert took < 10, (hosts, took, out)
        assert password not in out, out


def test_a_multi_host_failure_is_waited_out_only_when_every_host_s_failure_may_pass() -> None:
    from brooq.session import transient

    def attempts(*failures: str) -> psycopg.OperationalError:  # as psycopg words it
        lines = [failures[-1], "Multiple connection attempts failed. All failures were:"]
        lines += [f"- host: '127.0.0.1', port: '{5432 + i}', hostaddr: '127.0.0.1': {f}"
                  for i, f in enumerate(failures)]
        return psycopg.OperationalError("\n".join(lines))

    refused = ('connection failed: connection to server at "127.0.0.1", port 5432 failed: Connection refused\n'
               "\tIs the server running on that host and accepting TCP/IP connections?")
    standby = 'connection failed: connection to server at "127.0.0.1", port 5433 failed: server is in hot standby mode'
    password = ('connection failed: connection to server at "127.0.0.1", port 5433 failed: FATAL:  '
                'password authentication failed for user "u"')
    assert transient(attempts(refused, standby)) and transient(attempts(standby, refused))
    assert transient(attempts(refused, refused, "connection timeout expired"))
    assert not transient(attempts(refused, password)) and not transient(attempts(password, refused))
    assert not transient(attempts(refused, 'FATAL:  database "nope" does not exist'))
