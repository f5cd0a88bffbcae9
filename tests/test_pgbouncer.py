"""The worker behind PgBouncer in transaction mode (docs/operations.md, "Behind
PgBouncer"): a real pgbouncer (Debian's, 1.18: no protocol-level prepared statements)
started on 127.0.0.1 in front of the throwaway cluster, with a pool of 2 server
connections.

  - psycopg's prepared statements break there, and the session state a worker used to
    set (statement_timeout) leaks to the pool's other clients: the worker with
    transaction_pooler=true does neither;
  - producers enqueue through it; a worker drains through it, woken by NOTIFY on a
    direct connection (listen_dsn), or polling only (listen=false).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import brooq
import psycopg
import pytest
from conftest import Server
from pgcluster import free_port
from helpers import running, wait_for

PGBOUNCER = shutil.which("pgbouncer") or "/usr/sbin/pgbouncer"
POOL = 2


@pytest.fixture
def bouncer(server: Server, db: str) -> Iterator[str]:
    """A pgbouncer in transaction mode in front of the test's database: its DSN."""
    if not os.path.exists(PGBOUNCER):
        pytest.skip("pgbouncer is not installed (.ci/bootstrap installs it)")
    info = psycopg.conninfo.conninfo_to_dict(db)
    port = free_port()
    root = Path(tempfile.mkdtemp(prefix="brooq-pgbouncer-"))  # pytest's tmp_path is root's only
    (root / "userlist.txt").write_text('"postgres" ""\n')
    (root / "pgbouncer.ini").write_text(f"""
[databases]
{info['dbname']} = host={info['host']} port={info['port']} dbname={info['dbname']}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {port}
unix_socket_dir =
auth_type = trust
auth_file = {root / 'userlist.txt'}
pool_mode = transaction
default_pool_size = {POOL}
max_client_conn = 50
logfile = {root / 'pgbouncer.log'}
""")
    cmd = [PGBOUNCER, str(root / "pgbouncer.ini")]
    if os.geteuid() == 0:  # pgbouncer refuses to run as root: it becomes postgres itself
        shutil.chown(root, "postgres")
        cmd[1:1] = ["-u", "postgres"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    dsn = f"postgresql://postgres@127.0.0.1:{port}/{info['dbname']}"
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                with psycopg.connect(dsn, connect_timeout=2) as conn:
                    conn.execute("select 1")
                break
            except psycopg.OperationalError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise AssertionError(f"pgbouncer did not start:\n{proc.stdout and proc.stdout.read()}"
                                         f"\n{(root / 'pgbouncer.log').read_text()}") from None
                time.sleep(0.05)
        yield dsn
    finally:
        proc.terminate()  # SIGTERM: a fast exit
        proc.wait(timeout=10)
        shutil.rmtree(root, ignore_errors=True)


def pooled(dsn: str) -> psycopg.Connection[Any]:
    """A producer's connection through the pooler: no prepared statements."""
    return psycopg.connect(dsn, autocommit=True, prepare_threshold=None)


def every_server_connection(dsn: str, query: str) -> list[Any]:
    """``query`` on each of the pool's server connections: POOL clients, each holding one
    in an open transaction at once."""
    conns = [psycopg.connect(dsn, prepare_threshold=None) for _ in range(POOL)]
    try:
        return [c.execute(query).fetchone()[0] for c in conns]  # type: ignore[index,call-overload]
    finally:
        for c in conns:
            c.close()


def test_behind_pgbouncer_1_18_prepared_statements_break(bouncer: str) -> None:
    """Why the worker turns them off there: psycopg prepares a statement run 5 times, on
    the server connection of the moment; the next time it may get another one."""
    version = subprocess.run([PGBOUNCER, "--version"], capture_output=True, text=True,
                             check=False).stdout
    holder = psycopg.connect(bouncer)
    with psycopg.connect(bouncer, autocommit=True) as conn:  # psycopg's default: prepare_threshold=5
        for _ in range(6):
            conn.execute("select %s::int", [1])  # prepared on the one server connection in use
        holder.execute("select 1")  # another client holds that one in a transaction
        if "1.18" in version or "1.19" in version or "1.20" in version:
            with pytest.raises(psycopg.errors.InvalidSqlStatementName):
                conn.execute("select %s::int", [1])
    holder.close()


def test_the_worker_leaves_no_session_state_on_pooled_connections(bouncer: str, db: str) -> None:
    """statement_timeout (the one SET a worker makes on its connection) stays off the pool.
    Without transaction_pooler it stays on a server connection for the next client."""
    base = {"poll_interval": timedelta(milliseconds=100), "lease": timedelta(seconds=4),
            "listen_dsn": db}

    def timeouts_after(worker: brooq.Worker) -> list[str]:
        @worker.handler("noop")
        def noop(job: brooq.Job) -> None:
            pass

        with running(worker), pooled(bouncer) as conn:
            job = brooq.enqueue(conn, "noop", {})
            wait_for(lambda: brooq.get_job(conn, job.id).state == "done",  # type: ignore[union-attr]
                     what="the job")
        return every_server_connection(bouncer, "show statement_timeout")

    assert "2s" in timeouts_after(brooq.Worker(bouncer, transaction_pooler=False, **base))
    # a fresh pool: restart nothing, just let the old server connections go
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute("select pg_terminate_backend(pid) from pg_stat_activity "
                     "where backend_type = 'client backend' and pid <> pg_backend_pid()")
    time.sleep(0.2)
    assert timeouts_after(brooq.Worker(bouncer, transaction_pooler=True, **base)) == ["0"] * POOL


@pytest.mark.parametrize("listen", [True, False], ids=["notify-on-a-direct-connection", "polling-only"])
def test_a_worker_drains_through_pgbouncer(bouncer: str, db: str, listen: bool) -> None:
    """Producers enqueue through the pooler while a worker claims, heartbeats and settles
    through it. With listen_dsn, NOTIFY wakes it on a direct connection: a job enqueued
    to an idle worker is done well before the next poll (5 s)."""
    poll = timedelta(seconds=5) if listen else timedelta(milliseconds=200)
    worker = brooq.Worker(bouncer, transaction_pooler=True, concurrency=4, lease=timedelta(seconds=3),
                          poll_interval=poll, **({"listen_dsn": db} if listen else {"listen": False}))
    seen: list[int] = []

    @worker.handler("resize")
    def resize(job: brooq.Job) -> dict[str, int]:
        time.sleep(0.002)
        seen.append(job.payload["n"])
        return {"n": job.payload["n"]}

    with running(worker), pooled(bouncer) as conn:
        ids = [brooq.enqueue(conn, "resize", {"n": n}).id for n in range(20)]
        ids += [j.id for j in brooq.enqueue_many(conn, "resize", [{"n": n} for n in range(20, 200)])]
        wait_for(lambda: conn.execute(
            "select count(*) = 200 from brooq.jobs where topic = 'resize' and state = 'done'"
        ).fetchone()[0], timeout=30, what="200 jobs done")  # type: ignore[index]
        time.sleep(0.5)  # idle: the worker waits for a notification or its next poll
        start = time.monotonic()
        late = brooq.enqueue(conn, "resize", {"n": 200}).id
        wait_for(lambda: brooq.get_job(conn, late).state == "done",  # type: ignore[union-attr]
                 timeout=10, what="the late job")
        waited = time.monotonic() - start
    print(f"through pgbouncer, {'NOTIFY on a direct connection' if listen else 'polling only'}: "
          f"an idle worker ran a new job {waited * 1000:.0f} ms after its enqueue")
    assert sorted(seen) == list(range(201))
    assert waited < (1.0 if listen else 2.0), waited
    s = worker.snapshot()
    assert (s.done, s.failed) == (201, 0)


def test_a_pooled_worker_that_would_listen_through_the_pooler_is_refused() -> None:
    with pytest.raises(brooq.ConfigError, match="listen_dsn to a direct connection"):
        brooq.WorkerConfig.from_env({}, dsn="dbname=x", transaction_pooler=True)
    with pytest.raises(brooq.ConfigError, match="listen_dsn: not a valid connection string"):
        brooq.WorkerConfig.from_env({}, dsn="dbname=x", listen_dsn="nonsense here")
    env = {"BROOQ_DSN": "dbname=x", "BROOQ_TRANSACTION_POOLER": "true", "BROOQ_LISTEN": "false"}
    assert brooq.WorkerConfig.from_env(env).effective_listen_dsn is None
    env = {"BROOQ_DSN": "dbname=x", "BROOQ_LISTEN_DSN": "dbname=y"}
    assert brooq.WorkerConfig.from_env(env).effective_listen_dsn == "dbname=y"
    assert brooq.WorkerConfig.from_env({}, dsn="dbname=x").effective_listen_dsn == "dbname=x"


def test_the_dashboard_works_through_pgbouncer(bouncer: str, db: str) -> None:
    """docs/dashboard.md: no prepared statements, no session state."""
    from test_dashboard import TOKEN, start_dashboard

    with pooled(bouncer) as conn:
        brooq.declare_topic(conn, "mail")
        job = brooq.enqueue(conn, "mail", {"to": "ann"})
    d = start_dashboard(bouncer, "--token", TOKEN)
    try:
        for _ in range(3):
            for path in ("/", "/in-flight", "/jobs", f"/jobs/{job.id}", "/healthz"):
                assert d.get(path)[0] == 200, path
        status, headers, _ = d.request("POST", f"/jobs/{job.id}/cancel", {},
                                       {"authorization": f"Bearer {TOKEN}"})
        assert status == 303 and headers["location"].endswith("did=canceled")
    finally:
        d.proc.terminate()
        d.proc.wait(timeout=10)
    with pooled(bouncer) as conn:
        assert brooq.get_job(conn, job.id).state == "canceled"  # type: ignore[union-attr]
