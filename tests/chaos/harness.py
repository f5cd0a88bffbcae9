"""A chaos run: real worker processes drain a stream of jobs under a schedule of faults
drawn from one seed; then the history is read back and judged (checker.py).

    .venv/bin/python tests/chaos/harness.py --seed 42 --jobs 50000 --rate 60     # the long run
    .venv/bin/python tests/chaos/harness.py --seed 42 --jobs 1500 --rate 25      # the short mix

The seed is printed first: the same seed replays the same schedule (fault kinds,
times, victims chosen by index, job mix). Timing under load differs between runs, so
a replay reproduces the schedule, not every interleaving. Each run has its own
throwaway PostgreSQL cluster on 127.0.0.1 with synchronous_commit on (an acknowledged
enqueue must survive the -m immediate stop) and fsync off (the OS does not crash).
Everything it did is in the run directory: history.json, report.txt, server.log,
one log per worker process.

Job mix: mostly quick jobs, some slow ones, some that fail once or always, and one
poison pill in every 1000 jobs (the 500th, 1500th...): its handler kills its worker
process every time, the harness starts a replacement, and brooq.reap makes the job
dead at the topic's max_lease_losses (5) reaps in a row.

Fault schedules (names for --faults):
  kill9      kill -9 a random worker every 1-2 s; a replacement starts at once
  sigstop    SIGSTOP a worker for twice the lease, then SIGCONT
  terminate  pg_terminate_backend of a random worker session (the LISTEN ones half the time)
  restart    PostgreSQL stopped with -m immediate, started again 3 s later
  storm      lease storm: two SQL-only clients claim with a 1 s lease, no heartbeats,
             hold each job 2.5 s, then settle late
  cancel     ~1% of the jobs canceled while processing (running or prefetched)
  purge      four concurrent purgers on many old terminal rows (and some live old
             rows that must stay) while the workers run

Workflows (the chaos mix, ``workflow_share`` of the producer's batches): a batch of
ten is one workflow enqueued in one enqueue_many call: a root, a fan-out of four
after it, a fan-in after those four, a chain of three after the fan-in, and a last
job after the root, the chain's end and the newest job of an earlier batch (often
still running: a parent that settles while its child is enqueued). Its after_policy
is cancel or run, half each; its jobs fail always a little more often than others
(8%), so that parents die and the cancels hit parents too; the canceler also cancels
waiting jobs (a fifth of its cancels). The checker holds each child to its policy.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import brooq
import psycopg
from brooq.runner import START_CONFIRM
from brooq.tools.deploy import deploy

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pgcluster import Cluster  # noqa: E402  (tests/, put on the path above)

from chaos import history as hist
from chaos.checker import Report, check

APP = Path(__file__).with_name("app.py")
ALL_FAULTS = ("kill9", "sigstop", "terminate", "restart", "storm", "cancel", "purge")


@dataclass
class Config:
    seed: int
    jobs: int = 1500
    rate: float = 25.0  # jobs enqueued per second
    workers: int = 6
    concurrency: int = 4
    lease: float = 2.0
    faults: tuple[str, ...] = ALL_FAULTS
    restarts: int = 1  # PostgreSQL stops during the run
    cancel_share: float = 0.01
    purge_rows: int = 20_000
    drain_timeout: float = 120.0
    workflow_share: float = 0.2  # the chaos mix: batches that are one workflow each
    mix: str = "chaos"  # "prefetch": every job 150-400 ms, so prefetched jobs wait for a thread;
    # "failover": no slow job (the queue drains in a moment when a failover needs it quiet),
    # no poison pill (the same worker processes from start to end)
    run_dir: Path | None = None

    @property
    def cancel_bound(self) -> float:
        """How long after a cancel a handler may still start, not counting a SIGSTOP of its
        process meanwhile (the checker subtracts it): the worker starts a prefetched job
        only on a lease confirmed at most START_CONFIRM (0.1 s) before, plus an allowance
        of 1 s for a loaded machine (a thread descheduled between that check and the
        handler's first line). See docs/reliability.md."""
        return START_CONFIRM + 1.0


@dataclass
class Result:
    config: Config
    report: Report
    history: hist.History
    run_dir: Path
    extra: dict[str, float] = field(default_factory=dict)


class Chaos:
    def __init__(self, config: Config, cluster: Cluster, dsn: str, run_dir: Path) -> None:
        self.c = config
        self.cluster = cluster
        self.dsn = dsn
        self.dir = run_dir
        self.rng = random.Random(config.seed)
        self.h = hist.History()
        self.lock = threading.Lock()
        self.workers: dict[str, subprocess.Popen[bytes]] = {}
        self.others: list[subprocess.Popen[bytes]] = []  # storm clients
        self.pids: dict[int, str] = {}
        self.n_started = 0
        self.stopped: str | None = None  # the worker under SIGSTOP
        self.db_down = threading.Event()
        self.producing = threading.Event()
        self.extra: dict[str, float] = {"purged": 0, "purge_errors": 0, "storm_clients": 0,
                                        "old_live_rows_kept": 0}
        self.threads: list[threading.Thread] = []
        self.wlock = threading.Lock()  # self.workers: the fault loop and the respawner
        self.n_payloads = 0
        self.running = threading.Event()
        self.produce_lock = threading.Lock()  # held by the producer around each batch

    # --- processes ------------------------------------------------------------------

    def start_worker(self) -> None:
        self.n_started += 1
        name = f"w{self.n_started}"
        log = open(self.dir / f"{name}.log", "wb")  # noqa: SIM115 (the child keeps it)
        proc = subprocess.Popen([sys.executable, str(APP), self.dsn, "--name", name, "--lease",
                                 f"{self.c.lease}s", "--concurrency", str(self.c.concurrency)],
                                stdout=log, stderr=subprocess.STDOUT)
        self.workers[name] = proc
        self.pids[proc.pid] = name

    def fault(self, kind: str, target: str = "", detail: str = "") -> None:
        with self.lock:
            self.h.faults.append(hist.Fault(time.time(), kind, target, detail))

    def kill(self, proc: subprocess.Popen[bytes], kind: str) -> None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGKILL)
        proc.wait()
        self.h.process_end[proc.pid] = time.time()
        self.fault(kind, self.pids.get(proc.pid, str(proc.pid)))

    # --- the producer and the cancels -----------------------------------------------

    def payload(self, rng: random.Random) -> dict[str, Any]:
        if self.c.mix == "prefetch":
            return {"plan": "ok", "ms": rng.randint(150, 400)}
        self.n_payloads += 1
        x = rng.random()
        if self.n_payloads % 1000 == 500 and self.c.mix != "failover":
            return {"plan": "exit", "ms": 0}  # the poison pill
        if x < 0.005:
            return {"plan": "always_fail", "ms": rng.randint(5, 50)}
        if x < 0.035:
            return {"plan": "fail_once", "ms": rng.randint(5, 100)}
        if x < 0.055 and self.c.mix != "failover":
            return {"plan": "ok", "ms": rng.randint(800, 2500)}  # slow: often running when a fault hits
        return {"plan": "ok", "ms": rng.randint(10, 150)}

    def workflow(self, rng: random.Random, n: int) -> tuple[list[tuple[int, int]], str]:
        """The edges of one workflow batch of ``n`` jobs ((child, parent): elements from
        1, ``-k`` for element k, or the id of an earlier batch's job), and its policy."""
        if self.c.mix != "chaos" or n < 10 or rng.random() >= self.c.workflow_share:
            return [], "cancel"
        edges = [(c, -1) for c in (2, 3, 4, 5)]  # fan-out
        edges += [(6, -k) for k in (2, 3, 4, 5)]  # fan-in
        edges += [(7, -6), (8, -7), (9, -8), (10, -1), (10, -9)]  # a chain; a last job
        with self.lock:
            earlier = max(self.h.acked, default=None)
        if earlier is not None:
            edges.append((10, earlier))
        return edges, rng.choice(("cancel", "run"))

    def produce(self) -> None:
        rng = random.Random(self.c.seed + 1)
        batch = 10
        interval = batch / self.c.rate
        next_at = time.monotonic()
        conn: psycopg.Connection[Any] | None = None
        sent = 0
        while len(self.h.acked) < self.c.jobs:
            next_at += interval
            n = min(batch, self.c.jobs - len(self.h.acked))
            edges, policy = self.workflow(rng, n)
            payloads = [self.payload(rng) for _ in range(n)]
            for p in payloads:  # which job an acknowledged id is (see history.acked_payload)
                sent += 1
                p["p"] = sent
                if edges and p["plan"] != "exit" and rng.random() < 0.08:
                    p["plan"] = "always_fail"  # a parent that dies
            try:
                with self.produce_lock:
                    if conn is None or conn.closed:
                        conn = psycopg.connect(self.dsn, connect_timeout=5)
                    with conn.transaction():
                        got = brooq.enqueue_many(conn, "chaos", payloads, after=edges or None,
                                                 after_policy=policy)
                    now = time.time()  # the commit returned: acknowledged
                    with self.lock:
                        for e, p in zip(got, payloads, strict=True):
                            self.h.acked[e.id] = now
                            self.h.acked_payload[e.id] = p["p"]
            except psycopg.OperationalError:
                if conn is not None:
                    conn.close()
                time.sleep(0.3)  # this batch is not acknowledged (it may or may not exist)
            time.sleep(max(0.0, next_at - time.monotonic()))
        if conn is not None:
            conn.close()
        self.producing.clear()

    def cancel_loop(self) -> None:
        rng = random.Random(self.c.seed + 2)
        every = 1.0 / (self.c.rate * self.c.cancel_share)
        while self.producing.is_set():
            time.sleep(every * rng.uniform(0.5, 1.5))
            try:
                state = "waiting" if rng.random() < 0.2 else "processing"
                with psycopg.connect(self.dsn, autocommit=True, connect_timeout=5) as conn:
                    rows = conn.execute("select id from brooq.job where topic = 'chaos' and state = %s"
                                        " order by id", [state]).fetchall()
                    if not rows:
                        continue
                    job_id = rows[rng.randrange(len(rows))][0]
                    ok = brooq.cancel(conn, job_id)
                    committed = time.time()
                with self.lock:
                    self.h.cancels.append(hist.CancelRecord(job_id, committed, ok))
            except psycopg.OperationalError:
                pass  # a cancel whose commit we did not see is not recorded (nor counted)

    # --- faults ---------------------------------------------------------------------

    def kill9(self, rng: random.Random) -> None:
        with self.wlock:
            names = sorted(n for n in self.workers if n != self.stopped)
            if not names:
                return
            name = names[rng.randrange(len(names))]
            proc = self.workers.pop(name)
            self.kill(proc, "kill9")
            while self.db_down.is_set():  # a worker that cannot connect at start stops at once
                time.sleep(0.1)
            self.start_worker()

    def respawn(self) -> None:
        """Replace a worker that exited by itself (a poison pill's handler kills it)."""
        while self.running.is_set():
            time.sleep(0.1)
            if self.db_down.is_set():
                continue  # a worker cannot start while PostgreSQL is down: wait for it
            with self.wlock:
                for name, proc in list(self.workers.items()):
                    if proc.poll() is not None:
                        self.h.process_end[proc.pid] = time.time()
                        del self.workers[name]
                        self.fault("exit", name, f"exit code {proc.returncode}")
                        self.start_worker()

    def sigstop(self, rng: random.Random) -> None:
        with self.wlock:
            names = sorted(self.workers)
            if self.stopped is not None or not names:
                return
            name = names[rng.randrange(len(names))]
            proc = self.workers[name]
        proc.send_signal(signal.SIGSTOP)
        self.stopped = name
        self.fault("sigstop", name, f"{2 * self.c.lease}s")

        def resume() -> None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGCONT)
            self.stopped = None

        timer = threading.Timer(2 * self.c.lease, resume)
        timer.start()
        self.threads.append(timer)

    def terminate(self, rng: random.Random) -> None:
        if self.db_down.is_set():
            return
        listen = rng.random() < 0.5
        try:
            with psycopg.connect(self.dsn, autocommit=True, connect_timeout=5) as conn:
                rows = conn.execute(
                    "select pid, application_name, query ilike 'listen%%' from pg_stat_activity"
                    " where application_name like 'brooq worker w%%' order by pid").fetchall()
                pick = [r for r in rows if r[2] == listen] or rows
                if not pick:
                    return
                pid, app, is_listen = pick[rng.randrange(len(pick))]
                conn.execute("select pg_terminate_backend(%s)", [pid])
            self.fault("terminate", app.removeprefix("brooq worker "), "listen" if is_listen else "loop")
        except psycopg.OperationalError:
            pass

    def restart(self, rng: random.Random) -> None:
        self.db_down.set()
        self.fault("restart", "postgresql", "stop -m immediate, start 3 s later")
        self.cluster.pg_ctl("stop", "-m", "immediate", "-w")
        time.sleep(3.0)
        self.cluster.pg_ctl("start", "-w", "-t", "60", "-l", str(self.cluster.log))
        self.db_down.clear()

    def storm(self, rng: random.Random) -> None:
        procs = []
        for i in range(2):
            name = f"storm{len(self.others) + 1}"
            log = open(self.dir / f"{name}.log", "wb")  # noqa: SIM115
            p = subprocess.Popen([sys.executable, str(APP), self.dsn, "--name", name, "--storm",
                                  "--lease", "1s", "--hold", "2.5", "--batch", "8"],
                                 stdout=log, stderr=subprocess.STDOUT)
            self.pids[p.pid] = name
            self.others.append(p)
            procs.append(p)
            self.fault("storm", name, "lease 1s, hold 2.5s, no heartbeats")
        self.extra["storm_clients"] += 2

        def end() -> None:
            for p in procs:
                self.kill(p, "storm_end")

        timer = threading.Timer(15.0, end)
        timer.start()
        self.threads.append(timer)

    def purge(self, rng: random.Random) -> None:
        n = self.c.purge_rows
        self.fault("purge", "4 purgers", f"{n} old terminal rows")
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            brooq.declare_topic(conn, "old", retention=timedelta(days=1))
            conn.execute(
                "insert into brooq.job (topic, payload, state, attempts, max_attempts, available_at,"
                " created_at, updated_at)"
                " select 'old', '{}', (array['done', 'dead', 'canceled'])[1 + i %% 3], 1, 1,"
                "        now() - interval '3 days', now() - interval '3 days', now() - interval '2 days'"
                "   from generate_series(1, %s) i", [n])
            # live rows just as old: purge must leave every one of them
            conn.execute(
                "insert into brooq.job (topic, payload, state, attempts, max_attempts, available_at,"
                " created_at, updated_at, locked_by, locked_until)"
                " select 'old', '{}', s, 0, 1, now() + interval '1 year', now() - interval '3 days',"
                "        now() - interval '2 days',"
                "        case when s = 'processing' then 'ghost' end,"
                "        case when s = 'processing' then now() + interval '1 day' end"
                "   from unnest(array['pending', 'failed', 'processing']) s, generate_series(1, 100)")

        def purger() -> None:
            idle = 0
            while idle < 3:
                try:
                    with psycopg.connect(self.dsn, autocommit=True, connect_timeout=5) as conn:
                        while idle < 3:
                            row = conn.execute("select brooq.purge(500)").fetchone()
                            got = int(row[0]) if row else 0
                            with self.lock:
                                self.extra["purged"] += got
                            idle = idle + 1 if got == 0 else 0
                            if got == 0:
                                time.sleep(0.2)
                except psycopg.OperationalError:
                    time.sleep(0.5)
                except psycopg.Error as exc:  # a deadlock or anything else: a failure of purge
                    with self.lock:
                        self.extra["purge_errors"] += 1
                    self.fault("purge_error", "", f"{exc.sqlstate}: {exc}")

        for _ in range(4):
            t = threading.Thread(target=purger, daemon=True)
            t.start()
            self.threads.append(t)

    def schedule(self, window: float) -> list[tuple[float, str]]:
        """Every fault of the run: (seconds from the start, kind), from the seed alone."""
        rng = random.Random(self.c.seed)
        plan: list[tuple[float, str]] = []

        def every(kind: str, low: float, high: float, start: float = 1.0) -> None:
            t = start + rng.uniform(0, low)
            while t < window:
                plan.append((t, kind))
                t += rng.uniform(low, high)

        f = self.c.faults
        if "kill9" in f:
            every("kill9", 1.0, 2.0)
        if "sigstop" in f:
            every("sigstop", 5 * self.c.lease, 8 * self.c.lease)
        if "terminate" in f:
            every("terminate", 2.0, 4.0)
        if "restart" in f:
            for i in range(self.c.restarts):
                plan.append((window * (i + 0.5) / self.c.restarts + rng.uniform(-3, 3), "restart"))
        if "storm" in f:
            plan.append((window * 0.2, "storm"))
        if "purge" in f:
            plan.append((window * 0.65, "purge"))
        return sorted(plan)

    # --- the run --------------------------------------------------------------------

    def run(self) -> Result:
        window = self.c.jobs / self.c.rate
        plan = self.schedule(window)
        (self.dir / "schedule.json").write_text(json.dumps(plan))
        actions: dict[str, Callable[[random.Random], None]] = {
            "kill9": self.kill9, "sigstop": self.sigstop, "terminate": self.terminate,
            "restart": self.restart, "storm": self.storm, "purge": self.purge}
        for _ in range(self.c.workers):
            self.start_worker()
        self.running.set()
        respawner = threading.Thread(target=self.respawn, daemon=True)
        respawner.start()
        with psycopg.connect(self.dsn, autocommit=True) as conn:  # the topic, before the producer
            brooq.declare_topic(conn, "chaos", max_attempts=5, backoff_base=timedelta(milliseconds=50),
                                backoff_max=timedelta(milliseconds=200))
        self.producing.set()
        producer = threading.Thread(target=self.produce, daemon=True)
        producer.start()
        if "cancel" in self.c.faults:
            canceler = threading.Thread(target=self.cancel_loop, daemon=True)
            canceler.start()
        t0 = time.monotonic()
        rng = random.Random(self.c.seed + 3)  # the victims
        for at, kind in plan:
            time.sleep(max(0.0, t0 + at - time.monotonic()))
            if not self.producing.is_set():
                break
            actions[kind](rng)
        producer.join()
        self.extra["fault_window_s"] = round(time.monotonic() - t0, 1)
        for t in self.threads:
            t.join()
        self.drain()
        self.running.clear()
        respawner.join()
        self.stop_workers()
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            hist.read_database(conn, self.h, ["chaos"])
            live = conn.execute("select count(*) from brooq.job where topic = 'old'"
                                " and state not in ('done', 'dead', 'canceled')").fetchone()
            self.extra["old_live_rows_kept"] = live[0] if live else 0
        self.h.dump(self.dir / "history.json")
        report = check(self.h, cancel_bound=self.c.cancel_bound)
        report.figures |= self.extra
        (self.dir / "report.txt").write_text(f"seed {self.c.seed}\n{report.summary()}\n")
        return Result(self.c, report, self.h, self.dir, self.extra)

    def drain(self) -> None:
        deadline = time.monotonic() + self.c.drain_timeout
        while time.monotonic() < deadline:
            try:
                with psycopg.connect(self.dsn, autocommit=True) as conn:
                    row = conn.execute("select count(*) from brooq.job where topic = 'chaos'"
                                       " and state not in ('done', 'dead', 'canceled')").fetchone()
                if row and row[0] == 0:
                    return
            except psycopg.OperationalError:
                pass
            time.sleep(0.5)

    def stop_workers(self) -> None:
        for p in self.workers.values():
            with contextlib.suppress(ProcessLookupError):
                p.send_signal(signal.SIGCONT)
                p.send_signal(signal.SIGTERM)
        for p in [*self.workers.values(), *self.others]:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            self.h.process_end.setdefault(p.pid, time.time())


def run(config: Config) -> Result:
    """One chaos run on its own cluster; the run directory is kept (config.run_dir or a temp one)."""
    import tempfile

    run_dir = config.run_dir or Path(tempfile.mkdtemp(prefix=f"brooq-chaos-{config.seed}-"))
    run_dir.mkdir(parents=True, exist_ok=True)
    print(f"chaos: seed {config.seed}, run directory {run_dir}", flush=True)
    cluster = Cluster(durable=False, settings={"synchronous_commit": "on"}).start()
    try:
        with psycopg.connect(cluster.dsn, autocommit=True) as conn:
            conn.execute("create database chaos")
        dsn = cluster.dsn_for("chaos")
        deploy(dsn)
        with psycopg.connect(dsn, autocommit=True) as conn:
            hist.install(conn)
        chaos = Chaos(config, cluster, dsn, run_dir)
        try:
            result = chaos.run()
        finally:
            for p in [*chaos.workers.values(), *chaos.others]:
                if p.poll() is None:
                    p.kill()
                    p.wait()
    finally:
        with contextlib.suppress(Exception):
            (run_dir / "server.log").write_bytes(cluster.log.read_bytes())
        cluster.stop()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--jobs", type=int, default=1500)
    parser.add_argument("--rate", type=float, default=25.0)
    parser.add_argument("--workers", type=int, default=6)
    parser.add_argument("--restarts", type=int, default=1)
    parser.add_argument("--purge-rows", type=int, default=20_000)
    parser.add_argument("--faults", default=",".join(ALL_FAULTS))
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "big")
    config = Config(seed=seed, jobs=args.jobs, rate=args.rate, workers=args.workers,
                    restarts=args.restarts, purge_rows=args.purge_rows,
                    faults=tuple(args.faults.split(",")), run_dir=args.dir)
    result = run(config)
    print(result.report.summary())
    sys.exit(1 if result.report.total or result.extra["purge_errors"] else 0)


if __name__ == "__main__":
    main()
