"""A failover run: a primary and a streaming standby on loopback (pg_basebackup -R),
producers and `brooq worker` processes on a multi-host DSN
(``host=127.0.0.1,127.0.0.1 port=P1,P2 target_session_attrs=read-write``). Mid-run
the primary dies as its machine would (SIGKILL to every one of its processes), and
after ``promote_after`` seconds (the time a failover manager takes to decide) the
standby is promoted (pg_ctl promote). The old primary is never started again. With
several failovers, a new standby is cloned from each new primary before the next.

    .venv/bin/python tests/chaos/failover.py --jobs 300 --rate 60             # synchronous, the CI run
    .venv/bin/python tests/chaos/failover.py --jobs 3000 --rate 60 --async --failovers 3

Synchronous (``sync``): synchronous_standby_names = '*' and synchronous_commit = on,
so an enqueue or a settle is acknowledged once the standby has flushed it. Asynchronous:
no synchronous standby; the standby streams what it gets, and a commit acknowledged
by the primary may never reach it. In both modes brooq's claims commit with
synchronous_commit = off (queries.CLAIM).

The history is the chaos one (tests/chaos/history.py), with the witnesses moved out of
the database that fails over: each worker writes its executions and the outcomes the
database acknowledged to it to a file of its own (app.failover_worker); the producer
notes each acknowledged id with its payload; the database's transition log is read
from the last primary. The checker (checker.py) judges it; a claim lost with the old
primary is counted, not flagged, and must behave as a job ready again.

Figures: the jobs, the failovers, how much WAL the standby lacked at each kill, how
long each worker took to claim on the new primary after the promotion (resumption),
and what was lost (acknowledged enqueues, acknowledged outcomes, ids given twice).
Maintenance on the new primary: a job planted with an expired lease is reaped (by the
workers, every lease/2), old terminal jobs are purged (brooq.purge_all, pg_cron's
command, called; or, with ``pg_cron_wait``, pg_cron's own runs after the promotion).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import brooq
import psycopg
from brooq.tools.deploy import deploy

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pgcluster import Cluster, has_pg_cron  # noqa: E402  (tests/, put on the path above)

from chaos import history as hist
from chaos.checker import check
from chaos.harness import Chaos, Config, Result

HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent / "brooq"
COMMAND = [str(BIN)] if BIN.exists() else [sys.executable, "-m", "brooq.tools"]
# wal_writer_delay: a claim's WAL (committed without waiting for its flush) stays unflushed,
# and so unsent to the standby, until another commit flushes it (not 200 ms later)
# cron.use_background_workers: pg_cron runs a job through a connection to the host and
# port stored in cron.job when it was scheduled (the first primary's port); here every
# server has a port of its own, so the jobs run in background workers instead
SETTINGS = {"synchronous_commit": "on", "cron.database_name": "chaos", "wal_sender_timeout": "5s",
            "wal_writer_delay": "10s", "cron.use_background_workers": "on", "max_worker_processes": "16"}
PROBE_MS = 1000  # a probe job's handler: running when its claim is lost
RECONNECTED = re.compile(r"reconnected to the database after ([0-9.]+)s")
OLD_ROWS = 200  # old terminal jobs planted on the new primary for purge


@dataclass
class FailoverConfig(Config):
    sync: bool = True
    failovers: int = 1
    promote_after: float = 1.0  # seconds from the kill to the promotion
    pg_cron_wait: bool = False  # wait for pg_cron's own reap and purge on the last primary (pg_cron 1.4: up to a minute)
    faults: tuple[str, ...] = ()
    workers: int = 3
    drain_timeout: float = 60.0
    mix: str = "failover"


class Failover(Chaos):
    def __init__(self, config: FailoverConfig, chain: list[Cluster], dsn: str, run_dir: Path) -> None:
        super().__init__(config, chain[0], dsn, run_dir)
        self.fc = config
        self.chain = chain
        self.promoted: list[float] = []
        self.extra = {}

    def start_worker(self) -> None:
        """A real `brooq worker` process (the CLI) running app:failover_worker."""
        self.n_started += 1
        name = f"w{self.n_started}"
        log = open(self.dir / f"{name}.log", "wb")  # noqa: SIM115 (the child keeps it)
        env = {k: v for k, v in os.environ.items() if not k.startswith("BROOQ_")}
        env["CHAOS_AUDIT_DIR"] = str(self.dir)
        proc = subprocess.Popen([*COMMAND, "worker", "app:failover_worker", "--dsn", self.dsn, "--name", name,
                                 "--lease", f"{self.c.lease}s", "--concurrency", str(self.c.concurrency),
                                 "--poll-interval", "200ms", "--progress", "off", "--log-level", "INFO"],
                                cwd=HERE, env=env, stdout=log, stderr=subprocess.STDOUT)
        self.workers[name] = proc
        self.pids[proc.pid] = name

    def failover(self, i: int) -> None:
        """Kill the primary chain[i], promote chain[i + 1] after promote_after. The first,
        third... failover strikes under load; the second, fourth... after claims the
        standby cannot have (see quiet_claims)."""
        old, new = self.chain[i], self.chain[i + 1]
        if i % 2 == 0:
            lag = replication_lag(old)
            old.kill()
            how = "under load"
        else:
            with self.produce_lock:  # the producer waits (its next batch goes to the new primary)
                lag = self.quiet_claims(old, i)
                old.kill()
            how = "after unflushed claims"
        self.fault("failover", f"port {old.port}", f"{how}; unflushed by the standby {lag} bytes")
        self.extra[f"failover{i + 1}_unflushed_bytes"] = lag
        time.sleep(self.fc.promote_after)
        new.promote()
        self.promoted.append(time.time())
        self.fault("promote", f"port {new.port}")
        if i + 2 < len(self.chain):  # a standby for the next failover, cloned from the new primary
            self.chain[i + 2].start_standby(new)
            if self.fc.sync:
                make_synchronous(new)

    def quiet_claims(self, primary: Cluster, i: int) -> int:
        """Claims the standby never receives: once the queue is drained (no job held, so no
        heartbeat or settle to come), probe jobs are enqueued (a commit that waits for
        its flush) and claimed (commits that do not); the caller kills the primary as
        soon as their handlers run, before anything else commits. What the standby lacks
        then, in bytes of WAL."""
        with psycopg.connect(primary.dsn_for("chaos"), autocommit=True) as conn:
            deadline = time.monotonic() + 10
            while conn.execute("select count(*) from brooq.job where topic = 'chaos'"
                               " and state not in ('done', 'dead', 'canceled')").fetchone() != (0,):
                if time.monotonic() > deadline:
                    raise TimeoutError("the queue did not drain before the quiet failover")
                time.sleep(0.02)
            time.sleep(0.1)  # the last settles' answers reach their workers (leases released)
            while 58.5 <= time.time() % 60 or time.time() % 60 < 1.0:
                time.sleep(0.1)  # pg_cron's runs, every minute, commit: not at this moment
            n = 2 * self.c.workers
            probes = [{"plan": "ok", "ms": PROBE_MS, "p": -(i * 1000 + k + 1)} for k in range(n)]
            got = brooq.enqueue_many(conn, "chaos", probes)
            now = time.time()
            with self.lock:
                for e, p in zip(got, probes, strict=True):
                    self.h.acked[e.id] = now
                    self.h.acked_payload[e.id] = int(p["p"])
            ids = {e.id for e in got}
            deadline = time.monotonic() + 0.5  # well before their first heartbeat (lease/3)
            while time.monotonic() < deadline and not ids <= self.started_ids():
                time.sleep(0.005)
            self.extra[f"failover{i + 1}_probes_started"] = len(ids & self.started_ids())
            return replication_lag_on(conn)

    def wait_connected(self) -> None:
        """Until every worker's loop is connected (a worker still starting when the primary
        dies connects to the new one after a wait: no reconnect to measure)."""
        names = [f"brooq worker {n}" for n in self.workers]
        deadline = time.monotonic() + 60
        with psycopg.connect(self.chain[0].dsn, autocommit=True) as conn:
            while conn.execute("select count(distinct application_name) from pg_stat_activity"
                               " where application_name = any(%s)", [names]).fetchone() != (len(names),):
                if time.monotonic() > deadline:
                    raise TimeoutError("the workers did not connect")
                time.sleep(0.05)

    def started_ids(self) -> set[int]:
        """The jobs whose handlers have started, from the workers' files."""
        ids: set[int] = set()
        for path in self.dir.glob("w*.jsonl"):
            for line in path.read_text().splitlines():
                if '"start"' in line:
                    ids.add(int(json.loads(line)["job_id"]))
        return ids

    def run(self) -> Result:
        window = self.c.jobs / self.c.rate
        kills = [window * (i + 1) / (self.fc.failovers + 1) for i in range(self.fc.failovers)]
        for _ in range(self.c.workers):
            self.start_worker()
        self.wait_connected()
        self.running.set()
        respawner = threading.Thread(target=self.respawn, daemon=True)
        respawner.start()
        self.producing.set()
        producer = threading.Thread(target=self.produce, daemon=True)
        t0 = time.monotonic()
        producer.start()
        for i, at in enumerate(kills):
            time.sleep(max(0.0, t0 + at - time.monotonic()))
            self.failover(i)
        last = self.chain[self.fc.failovers]
        self.plant_maintenance(last)
        producer.join()
        self.extra["fault_window_s"] = round(time.monotonic() - t0, 1)
        self.drain()
        self.running.clear()
        respawner.join()
        self.maintenance(last)
        self.stop_workers()
        with psycopg.connect(last.dsn_for("chaos"), autocommit=True) as conn:
            hist.read_database(conn, self.h, ["chaos"])
        self.read_audit()
        self.h.dump(self.dir / "history.json")
        report = check(self.h, cancel_bound=self.c.cancel_bound)
        self.resumption(report.figures)
        report.figures |= self.extra
        (self.dir / "report.txt").write_text(f"seed {self.c.seed}\n{report.summary()}\n")
        return Result(self.c, report, self.h, self.dir, self.extra)

    # --- maintenance on the new primary ----------------------------------------------

    def plant_maintenance(self, primary: Cluster) -> None:
        """On the new primary: a job whose lease expired (no worker takes its topic) and
        old terminal jobs past their retention."""
        with psycopg.connect(primary.dsn_for("chaos"), autocommit=True) as conn:
            conn.execute(
                "insert into brooq.job (topic, payload, state, attempts, max_attempts, available_at,"
                " created_at, updated_at, locked_by, locked_until)"
                " values ('ghost', '{}', 'processing', 1, 5, now(), now(), now(), 'ghost',"
                "         now() - interval '1 second')")
            conn.execute(
                "insert into brooq.job (topic, payload, state, attempts, max_attempts, available_at,"
                " created_at, updated_at)"
                " select 'old', '{}', (array['done', 'dead', 'canceled'])[1 + i %% 3], 1, 1,"
                "        now() - interval '3 days', now() - interval '3 days', now() - interval '2 days'"
                "   from generate_series(1, %s) i", [OLD_ROWS])
        self.planted_at = time.time()

    def maintenance(self, primary: Cluster) -> None:
        """The planted jobs: reaped and purged on the new primary. pg_cron: its scheduler runs
        there (it starts at the end of recovery), and with pg_cron_wait its own runs did both."""
        f = self.extra
        with psycopg.connect(primary.dsn_for("chaos"), autocommit=True) as conn:
            def ghost() -> str:
                row = conn.execute("select state from brooq.job where topic = 'ghost'").fetchone()
                return str(row[0]) if row else "missing"

            def old_rows() -> int:
                row = conn.execute("select count(*) from brooq.job where topic = 'old'").fetchone()
                return int(row[0]) if row else -1

            def runs() -> dict[str, int]:
                return dict(conn.execute(
                    "select j.jobname, count(*)::int from cron.job_run_details d join cron.job j using (jobid)"
                    " where d.status = 'succeeded' and d.start_time > to_timestamp(%s)"
                    " group by j.jobname", [self.promoted[-1]]).fetchall())

            cron = has_pg_cron(primary.bin)
            f["pg_cron_scheduler"] = int(cron and conn.execute(
                "select count(*) from pg_stat_activity where application_name = 'pg_cron scheduler'"
            ).fetchone() == (1,))
            wait_cron = self.fc.pg_cron_wait and cron
            deadline = time.monotonic() + (75.0 if wait_cron else 10.0)
            while time.monotonic() < deadline and (ghost() != "pending" or (wait_cron and (
                    old_rows() > 0 or not {"brooq_reap", "brooq_purge"} <= set(runs())))):
                time.sleep(0.2)
            f["ghost_reaped"] = int(ghost() == "pending")
            if wait_cron:
                done = runs()
                f["pg_cron_reap_runs"] = done.get("brooq_reap", 0)
                f["pg_cron_purge_runs"] = done.get("brooq_purge", 0)
            else:
                conn.execute("call brooq.purge_all()")  # pg_cron's brooq_purge command
            f["old_rows_left"] = old_rows()

    # --- the witnesses ---------------------------------------------------------------

    def read_audit(self) -> None:
        """The executions and acknowledged outcomes from the workers' files."""
        starts: dict[str, dict[str, Any]] = {}
        ends: dict[str, dict[str, Any]] = {}
        for path in sorted(self.dir.glob("w*.jsonl")):
            for line in path.read_text().splitlines():
                r = json.loads(line)
                if r["kind"] == "start":
                    starts[r["exec_id"]] = r
                elif r["kind"] == "end":
                    ends[r["exec_id"]] = r
                else:
                    self.h.settles.append(hist.SettleRecord(r["job_id"], r["lease_token"], r["state"],
                                                            r["worker"], r["at"]))
        self.h.executions = sorted(
            (hist.Execution(s["exec_id"], s["job_id"], s["lease_token"], s["attempt"], s["worker"], s["pid"],
                            s["at"], ends[x]["at"] if x in ends else None, bool(ends.get(x, {}).get("lost")))
             for x, s in starts.items()), key=lambda e: e.started_at)

    def resumption(self, figures: dict[str, float]) -> None:
        """Per failover: the promotion's delay; how long each worker took from losing its
        connection to being connected to the new primary (its log says "reconnected ...
        after Xs"; the n-th such line of a worker is the n-th failover: nothing else
        disconnects them), the slowest; and the first job done on the new primary."""
        kills = [f.at for f in self.h.faults if f.kind == "failover"]
        reconnects = [[float(x) for x in RECONNECTED.findall(path.read_text(errors="replace"))]
                      for path in sorted(self.dir.glob("w*.log"))]
        for i, (killed, promoted) in enumerate(zip(kills, self.promoted, strict=True), start=1):
            until = self.promoted[i] if i < len(self.promoted) else float("inf")
            done_at = min((t.at for t in self.h.transitions if t.new_state == "done" and promoted <= t.at < until),
                          default=float("inf"))
            seconds = [r[i - 1] for r in reconnects if len(r) >= i]
            figures[f"failover{i}_workers_reconnected"] = len(seconds)
            figures[f"failover{i}_promote_s"] = round(promoted - killed, 2)
            figures[f"failover{i}_reconnect_max_s"] = round(max(seconds, default=math.inf), 2)
            figures[f"failover{i}_first_done_after_kill_s"] = round(done_at - killed, 2)


def replication_lag(primary: Cluster) -> int:
    """Bytes of WAL the primary wrote that its standby has not flushed (-1: no standby)."""
    with psycopg.connect(primary.dsn, autocommit=True, connect_timeout=5) as conn:
        return replication_lag_on(conn)


def replication_lag_on(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute("select pg_wal_lsn_diff(pg_current_wal_insert_lsn(), flush_lsn)::bigint"
                       "  from pg_stat_replication").fetchone()
    return int(row[0]) if row and row[0] is not None else -1


def make_synchronous(primary: Cluster) -> None:
    """synchronous_standby_names = '*' on the primary; wait until its standby is sync."""
    with psycopg.connect(primary.dsn, autocommit=True) as conn:
        conn.execute("alter system set synchronous_standby_names = '*'")
        conn.execute("select pg_reload_conf()")
        deadline = time.monotonic() + 30
        while conn.execute("select count(*) from pg_stat_replication where sync_state = 'sync'"
                           ).fetchone() != (1,):
            if time.monotonic() > deadline:
                raise TimeoutError("the standby did not become synchronous")
            time.sleep(0.05)


def multi_host_dsn(chain: list[Cluster]) -> str:
    """Every cluster of the chain, in order: libpq takes the first that accepts writes."""
    hosts = ",".join("127.0.0.1" for _ in chain)
    ports = ",".join(str(c.port) for c in chain)
    return f"host={hosts} port={ports} dbname=chaos user=postgres target_session_attrs=read-write"


def run(config: FailoverConfig) -> Result:
    """One failover run on its own clusters; the run directory is kept."""
    run_dir = config.run_dir or Path(tempfile.mkdtemp(prefix=f"brooq-failover-{config.seed}-"))
    run_dir.mkdir(parents=True, exist_ok=True)
    print(f"failover: seed {config.seed}, run directory {run_dir}", flush=True)
    chain = [Cluster(durable=False, settings=SETTINGS) for _ in range(config.failovers + 1)]
    chaos: Failover | None = None
    try:
        primary = chain[0].start()
        with psycopg.connect(primary.dsn, autocommit=True) as conn:
            conn.execute("create database chaos")
        deploy(primary.dsn_for("chaos"), method="psql")
        with psycopg.connect(primary.dsn_for("chaos"), autocommit=True) as conn:
            hist.install(conn)
            brooq.declare_topic(conn, "chaos", max_attempts=5, backoff_base=timedelta(milliseconds=50),
                                backoff_max=timedelta(milliseconds=200))
            brooq.declare_topic(conn, "ghost")
            brooq.declare_topic(conn, "old", retention=timedelta(days=1))
            if has_pg_cron(primary.bin):
                conn.execute("create extension pg_cron")
                conn.execute("select brooq.schedule_maintenance('* * * * *', '* * * * *')")
        chain[1].start_standby(primary)
        if config.sync:
            make_synchronous(primary)
        chaos = Failover(config, chain, multi_host_dsn(chain), run_dir)
        return chaos.run()
    finally:
        if chaos is not None:
            for p in [*chaos.workers.values(), *chaos.others]:
                if p.poll() is None:
                    p.kill()
                    p.wait()
        for i, cluster in enumerate(chain):
            with contextlib.suppress(Exception):
                (run_dir / f"server{i}.log").write_bytes(cluster.log.read_bytes())
            cluster.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--jobs", type=int, default=300)
    parser.add_argument("--rate", type=float, default=60.0)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--failovers", type=int, default=1)
    parser.add_argument("--async", dest="sync", action="store_false")
    parser.add_argument("--pg-cron-wait", action="store_true")
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "big")
    result = run(FailoverConfig(seed=seed, jobs=args.jobs, rate=args.rate, workers=args.workers,
                                sync=args.sync, failovers=args.failovers, pg_cron_wait=args.pg_cron_wait,
                                run_dir=args.dir))
    print(result.report.summary())
    sys.exit(1 if result.report.total else 0)


if __name__ == "__main__":
    main()
