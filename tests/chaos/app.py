"""The chaos test application: one worker process that audits every execution.

    python tests/chaos/app.py DSN --name w3 [--lease 2s] [--concurrency 4]
    python tests/chaos/app.py DSN --name storm1 --storm [--lease 1s] [--hold 2.5]

Topic ``chaos``: the payload says what the handler does:
  {"ms": 50, "plan": "ok" | "fail_once" | "always_fail" | "exit"}
The handler records its start in chaos.execution (its own autocommit connection,
retried until stored, so a PostgreSQL restart delays it but never loses it), waits
``ms`` (stopping early when job.canceled is set: the lease is lost), records its end,
then returns {"exec": id} (done) or raises "planned failure exec=id" (fail_once on
its first attempt, always_fail always), so that the outcome names its execution.
A workflow's child also records its parents as the claim handed them (Job.parents):
each one's state, as [state] (a claim hands no results).
"exit" is the poison pill: after its audited start the handler kills its own process
(os._exit), every time, until brooq.reap makes the job dead (max_lease_losses).

--storm: a client of the SQL functions alone, with no heartbeats: it claims jobs with
a short lease, runs each for ``--hold`` seconds (longer than the lease), then settles
them with the lease tokens claim returned. A lease storm: every one of its jobs is
reaped and claimed again elsewhere, and its late settles must all be refused.

Across a failover (tests/chaos/failover.py) the database is no witness of what it
lost: ``failover_worker`` is the same worker run by `brooq worker app:failover_worker`
(the CLI), its audit in a file of its own ($CHAOS_AUDIT_DIR/<name>.jsonl) rather than
in the database, and each outcome the database acknowledged to it (the settling
thread's answer, after the commit) written there too.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import threading
import time
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any, LiteralString

import brooq
import psycopg
from brooq.settler import Pending, Settler
from psycopg.types.json import Jsonb

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

log = logging.getLogger("chaos.app")
TOPIC = "chaos"
MAX_ATTEMPTS = 5
AUDIT_PATIENCE = 180.0  # seconds a handler keeps trying to write its audit row


class Audit:
    """chaos.execution writes, one autocommit connection per thread, retried."""

    def __init__(self, dsn: str, worker: str) -> None:
        self.dsn = dsn
        self.worker = worker
        self.pid = os.getpid()
        self.local = threading.local()

    def _write(self, query: LiteralString, args: list[Any]) -> None:
        deadline = time.monotonic() + AUDIT_PATIENCE
        while True:
            conn: psycopg.Connection[Any] | None = getattr(self.local, "conn", None)
            try:
                if conn is None or conn.closed:
                    conn = psycopg.connect(self.dsn, autocommit=True, connect_timeout=5,
                                           application_name=f"chaos audit {self.worker}")
                    self.local.conn = conn
                conn.execute(query, args)
                return
            except psycopg.OperationalError:
                if conn is not None:
                    conn.close()
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def start(self, exec_id: str, job_id: int, token: int, attempt: int,
              parents: dict[str, list[Any]] | None = None) -> None:
        self._write("insert into chaos.execution (exec_id, job_id, lease_token, attempt, worker, pid,"
                    " started_at, parents) values (%s, %s, %s, %s, %s, %s, %s, %s) on conflict do nothing",
                    [exec_id, job_id, token, attempt, self.worker, self.pid, time.time(),
                     None if parents is None else Jsonb(parents)])

    def end(self, exec_id: str, lost: bool) -> None:
        self._write("update chaos.execution set ended_at = %s, lost = %s where exec_id = %s",
                    [time.time(), lost, exec_id])


class FileAudit:
    """The executions (and the acknowledged outcomes) of one worker process, one JSON
    line each, appended with one write (a process killed keeps every line written)."""

    def __init__(self, path: Path, worker: str) -> None:
        self.worker = worker
        self.pid = os.getpid()
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def _line(self, record: dict[str, Any]) -> None:
        os.write(self.fd, (json.dumps(record) + "\n").encode())

    def start(self, exec_id: str, job_id: int, token: int, attempt: int,
              parents: dict[str, list[Any]] | None = None) -> None:
        self._line({"kind": "start", "exec_id": exec_id, "job_id": job_id, "lease_token": token,
                    "attempt": attempt, "worker": self.worker, "pid": self.pid, "at": time.time()})

    def end(self, exec_id: str, lost: bool) -> None:
        self._line({"kind": "end", "exec_id": exec_id, "at": time.time(), "lost": lost})

    def settled(self, job_id: int, token: int, state: str | None) -> None:
        self._line({"kind": "settled", "job_id": job_id, "lease_token": token, "state": state,
                    "worker": self.worker, "at": time.time()})


def execute(audit: Audit | FileAudit, job_id: int, token: int, attempt: int, payload: Any,
            canceled: Any, hold: float | None = None,
            parents: dict[str, list[Any]] | None = None) -> dict[str, str]:
    """One execution: audited start, the work, audited end, then the planned outcome."""
    exec_id = uuid.uuid4().hex[:16]
    audit.start(exec_id, job_id, token, attempt, parents)
    if payload.get("plan") == "exit" and hold is None:
        os._exit(3)  # the poison pill: the whole worker process dies mid-handler
    seconds = hold if hold is not None else float(payload.get("ms", 0)) / 1000
    if canceled is not None:
        lost = bool(canceled.wait(seconds))
    else:
        time.sleep(seconds)
        lost = False
    audit.end(exec_id, lost)
    if lost:
        raise RuntimeError(f"lease lost exec={exec_id}")
    plan = payload.get("plan", "ok")
    if plan == "always_fail" or (plan == "fail_once" and attempt == 1):
        raise RuntimeError(f"planned failure exec={exec_id}")
    return {"exec": exec_id}


def build(dsn: str | None, name: str | None, lease: timedelta, concurrency: int,
          audit_dir: Path | None = None) -> brooq.Worker:
    worker = brooq.Worker(dsn, name=name, lease=lease, concurrency=concurrency,
                          poll_interval=timedelta(milliseconds=200), shutdown_grace=timedelta(seconds=10))
    audit: Audit | FileAudit = (Audit(worker.config.dsn, worker.name) if audit_dir is None
                                else FileAudit(audit_dir / f"{worker.name}.jsonl", worker.name))

    @worker.handler(TOPIC, max_attempts=MAX_ATTEMPTS, backoff_base=timedelta(milliseconds=50),
                    backoff_max=timedelta(milliseconds=200), timeout=None)
    def handle(job: brooq.Job) -> dict[str, str]:
        return execute(audit, job.id, job.lease_token, job.attempt, job.payload, job.canceled,
                       parents=seen_parents(job))

    if isinstance(audit, FileAudit):
        witness_settles(audit)
    return worker


def seen_parents(job: brooq.Job) -> dict[str, list[Any]] | None:
    """A workflow's child: each parent's state, as the claim handed it to the handler
    (Job.parents); None for a job without parents."""
    if not job.parents:
        return None
    return {str(p.id): [p.state] for p in job.parents}


def witness_settles(audit: FileAudit) -> None:
    """Record each outcome the database answered for (Settler.settled runs on the loop's
    thread once the settling transaction committed; a NULL state: the lease was lost and
    nothing was written). Test instrumentation: brooq has no per-job settle hook."""
    original = Settler.settled

    def settled(self: Settler, batch: list[Pending], states: dict[int, str | None]) -> None:
        for p in batch:
            if p.attempt.job.id in states:
                audit.settled(p.attempt.job.id, p.attempt.job.lease_token, states[p.attempt.job.id])
        original(self, batch, states)

    Settler.settled = settled  # type: ignore[method-assign]


def failover_worker() -> brooq.Worker:
    """For `brooq worker app:failover_worker --dsn ... --name ...`: the audited worker with
    its audit in $CHAOS_AUDIT_DIR; the command line's settings win over these."""
    return build(None, None, timedelta(seconds=2), 4, Path(os.environ["CHAOS_AUDIT_DIR"]))


Outcome = tuple[str, str | None, dict[str, str] | None]  # (outcome, error, result)


def _storm_job(audit: Audit, hold: float, outcomes: dict[int, Outcome],
               job_id: int, token: int, attempt: int, payload: Any, parents: Any) -> None:
    seen = None if not parents else {  # the claim's JSON array, as Job.parents reads it
        str(p["id"]): [p["state"]] for p in parents}
    try:
        outcomes[job_id] = ("done", None, execute(audit, job_id, token, attempt, payload, None, hold, seen))
    except RuntimeError as exc:
        outcomes[job_id] = ("failed", str(exc), None)


def storm(dsn: str, name: str, lease: timedelta, hold: float, batch: int) -> None:
    """Claim, hold past the lease without heartbeats, settle late; until SIGTERM/SIGKILL."""
    audit = Audit(dsn, name)
    refused = settled = 0
    while True:
        try:
            with psycopg.connect(dsn, autocommit=True, application_name=f"brooq worker {name}") as conn:
                while True:
                    rows = conn.execute(
                        "select id, lease_token, attempt, payload, parents from brooq.claim(%s, array[%s], %s, %s)",
                        [name, TOPIC, batch, lease]).fetchall()
                    if not rows:
                        time.sleep(0.1)
                        continue
                    threads: list[threading.Thread] = []
                    outcomes: dict[int, Outcome] = {}
                    for r in rows:
                        t = threading.Thread(target=_storm_job, args=(audit, hold, outcomes, *r), daemon=True)
                        t.start()
                        threads.append(t)
                    for t in threads:
                        t.join()
                    ids = [r[0] for r in rows]
                    # late, but accepted while no reap took the lease (an expired lease
                    # is still valid until then): the outcome names its execution, as
                    # a worker's does
                    got = conn.execute(
                        "select id, state from brooq.settle_many(%s, %s, %s, %s, %s, null, %s::jsonb[])",
                        [name, ids, [r[1] for r in rows], [outcomes[i][0] for i in ids],
                         [outcomes[i][1] for i in ids],
                         [None if outcomes[i][2] is None else Jsonb(outcomes[i][2]) for i in ids]]).fetchall()
                    settled += len(got)
                    refused += len(rows) - len(got)
                    log.info("%s: settled %d, refused %d so far", name, settled, refused)
        except psycopg.OperationalError as exc:
            log.warning("%s: %s", name, exc)
            time.sleep(0.5)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("dsn")
    parser.add_argument("--name", required=True)
    parser.add_argument("--lease", type=brooq.parse_duration, default=timedelta(seconds=2))
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--storm", action="store_true")
    parser.add_argument("--hold", type=float, default=2.5)
    parser.add_argument("--batch", type=int, default=4)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO if args.storm else logging.WARNING, format=f"{args.name} %(levelname)s %(message)s")
    if args.storm:
        storm(args.dsn, args.name, args.lease, args.hold, args.batch)
    else:
        build(args.dsn, args.name, args.lease, args.concurrency).run()


if __name__ == "__main__":
    main()
