"""`brooq demo`: the queue end to end in about ten seconds.

1. With no DSN, start a throwaway PostgreSQL (removed at the end).
2. Deploy the schema (sqitch deploy --verify, else psql -f sql/install.sql).
3. From SQL (psql when it is installed), in one transaction: declare the topics and
   enqueue a few thousand jobs: plain ones, some that fail and then succeed on a
   retry, some that fail on every attempt and go dead, some delayed, a few with
   priority, and one long job.
4. Run a brooq.Worker with live progress. A second connection cancels the long
   job while it runs; its handler sees job.canceled and returns.
5. When every job is terminal, stop the worker and print each job's fate grouped
   by state (one SELECT: a job's fate is its own row) and the throughput.

With --dsn it uses that database: its own topics (demo.*), and the jobs stay.
"""

from __future__ import annotations

import logging
import random
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, LiteralString, TextIO, TypeVar

import psycopg
from psycopg.rows import class_row, scalar_row

import brooq
from brooq.messages import _, _n
from brooq.snapshot import WorkerSnapshot
from brooq.states import CANCELABLE, TERMINAL
from brooq.tools import queries
from brooq.tools.cluster import Cluster, NoServer
from brooq.tools.deploy import DeployError, deploy
from brooq.tools.progress import Progress, settled
from brooq.tools.text import describe, format_table

H = TypeVar("H", bound=Callable[..., Any])

# Topic settings, used both in the SQL that declares them and by the worker's
# handlers (a worker declares its topics at start: the two must agree).
TOPICS: dict[str, int] = {  # topic -> max_attempts
    "demo.email": 5,
    "demo.flaky": 5,
    "demo.doomed": 3,
    "demo.report": 1,
}
BACKOFF_BASE = timedelta(milliseconds=100)
BACKOFF_MAX = timedelta(seconds=1)
DELAY = timedelta(seconds=2)
LEASE = timedelta(seconds=3)
CONCURRENCY = 32


def expected_failures(record: logging.LogRecord) -> bool:
    """A logging filter: drop the failures and deaths the demo's own topics are made for."""
    topic = getattr(record, "brooq_topic", None)
    return not (isinstance(topic, str) and topic in TOPICS
                and getattr(record, "brooq_event", None) in ("failed", "dead"))


@dataclass
class Plan:
    """How many jobs of each kind; the fates they must end in."""

    email: int
    flaky: int
    doomed: int
    delayed: int
    vip: int
    long: int = 1

    @staticmethod
    def for_total(total: int) -> Plan:
        if total < 20:
            raise ValueError(_("demo.too_few_jobs", total=total))
        doomed = max(1, total * 2 // 100)
        flaky = max(2, total * 8 // 100)
        delayed = max(1, total * 5 // 100)
        vip = 5
        email = total - doomed - flaky - delayed - vip - 1
        return Plan(email=email, flaky=flaky, doomed=doomed, delayed=delayed, vip=vip)

    @property
    def total(self) -> int:
        return self.email + self.flaky + self.doomed + self.delayed + self.vip + self.long

    def expected(self) -> dict[str, int]:
        return {"done": self.email + self.flaky + self.delayed + self.vip,
                "dead": self.doomed, "canceled": self.long}

    def statements(self) -> list[tuple[str, LiteralString, dict[str, Any]]]:
        """(label, SQL, values): the declarations, then one enqueue per kind of job."""
        backoff = {"backoff_base": _interval(BACKOFF_BASE), "backoff_max": _interval(BACKOFF_MAX)}
        out: list[tuple[str, LiteralString, dict[str, Any]]] = [
            (f"topic {name}", queries.DEMO_DECLARE_TOPIC,
             {"topic": name, "max_attempts": max_attempts, **backoff})
            for name, max_attempts in TOPICS.items()]
        out += [
            ("long", queries.DEMO_ENQUEUE_LONG,
             {"topic": "demo.report", "payload": '{"report": "yearly", "seconds": 60}',
              "priority": 20}),
            ("email", queries.DEMO_ENQUEUE_EMAIL,
             {"topic": "demo.email", "prefix": "user", "count": self.email}),
            ("flaky", queries.DEMO_ENQUEUE_FLAKY, {"topic": "demo.flaky", "count": self.flaky}),
            ("doomed", queries.DEMO_ENQUEUE_DOOMED, {"topic": "demo.doomed", "count": self.doomed}),
            ("delayed", queries.DEMO_ENQUEUE_EMAIL_LATER,
             {"topic": "demo.email", "prefix": "later", "count": self.delayed,
              "delay": _interval(DELAY)}),
            ("vip", queries.DEMO_ENQUEUE_EMAIL_FIRST,
             {"topic": "demo.email", "prefix": "vip", "count": self.vip, "priority": 10}),
        ]
        return out


def render(dsn: str, statements: list[tuple[str, LiteralString, dict[str, Any]]]) -> list[tuple[str, str]]:
    """(label, SQL text with its values): what psql runs and the user reads."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        cur = psycopg.ClientCursor(conn)
        return [(label, cur.mogrify(query, values)) for label, query, values in statements]


def _interval(value: timedelta) -> str:
    ms = int(value.total_seconds() * 1000)
    return f"{ms} milliseconds" if ms % 1000 else f"{ms // 1000} seconds"


@dataclass
class Enqueued:
    ids: dict[str, list[int]] = field(default_factory=dict)
    statements: list[tuple[str, str]] = field(default_factory=list)  # (label, SQL text)
    tool: str = ""
    seconds: float = 0.0

    @property
    def all(self) -> list[int]:
        return [i for label, ids in self.ids.items() if not label.startswith("topic ") for i in ids]


def enqueue_from_sql(dsn: str, plan: Plan) -> Enqueued:
    """Run the plan's SQL in one transaction: through psql if installed, else psycopg."""
    result = Enqueued()
    started = time.monotonic()
    statements = result.statements = render(dsn, plan.statements())
    if shutil.which("psql"):
        script = "\n".join(f"\\echo #{label}\n{sql};" for label, sql in statements)
        done = subprocess.run(
            ["psql", "-X", "-q", "-A", "-t", "-1", "-v", "ON_ERROR_STOP=1", "-d", dsn, "-f", "-"],
            input=script, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(_("demo.psql_failed", error=done.stderr.strip()))
        label = ""
        for line in done.stdout.splitlines():
            if line.startswith("#"):
                label = line[1:]
                result.ids[label] = []
            elif line.strip() and line.strip().isdigit():
                result.ids[label].append(int(line))
            elif line.strip():
                result.ids[label].append(0)  # a declared topic's name
        result.tool = "psql"
    else:
        with psycopg.connect(dsn) as conn, conn.transaction():
            for label, sql in statements:
                values = conn.cursor(row_factory=scalar_row).execute(sql.encode()).fetchall()
                result.ids[label] = [v if isinstance(v, int) else 0 for v in values]
        result.tool = "psycopg"
    result.seconds = time.monotonic() - started
    return result


class Demo:
    """One run of the demo against a database that has brooq deployed."""

    def __init__(self, dsn: str, plan: Plan, out: TextIO, *, timeout: float,
                 progress: str = "auto") -> None:
        self.dsn = dsn
        self.plan = plan
        self.out = out
        self.timeout = timeout
        self.progress_mode = progress
        self.progress: Progress | None = None
        self.long_id = 0
        self.finished = threading.Event()
        self.timed_out = False
        self.error: BaseException | None = None
        self.enqueued = Enqueued()
        self.interrupted = False
        self.started_at: datetime | None = None  # the database's clock when the worker started

    def say(self, message: str) -> None:
        if self.progress is not None:
            self.progress.note(message)
        else:
            self.out.write(message + "\n")
            self.out.flush()

    # --- the handlers --------------------------------------------------------------

    def build_worker(self) -> brooq.Worker:
        worker = brooq.Worker(self.dsn, concurrency=CONCURRENCY, lease=LEASE,
                              poll_interval=timedelta(milliseconds=200), name="demo-worker",
                              shutdown_grace=timedelta(seconds=5))

        def handles(topic: str, timeout: timedelta = timedelta(minutes=1)) -> Callable[[H], H]:
            return worker.handler(topic, max_attempts=TOPICS[topic], backoff_base=BACKOFF_BASE,
                                  backoff_max=BACKOFF_MAX, timeout=timeout)

        @handles("demo.email")
        def send_email(job: brooq.Job) -> object:
            time.sleep(random.uniform(0, 0.002))  # the mail server answers
            return {"sent": True}

        @handles("demo.flaky")
        def charge(job: brooq.Job) -> object:
            fail_times = int(job.payload["fail_times"])
            if job.attempt <= fail_times:
                raise ConnectionError(f"payment gateway timed out on attempt {job.attempt}")
            return {"charged": job.payload["order"], "attempt": job.attempt}

        @handles("demo.doomed")
        def invoice(job: brooq.Job) -> object:
            raise ValueError(f"invoice {job.payload['invoice']}: no such customer")

        @handles("demo.report", timeout=timedelta(minutes=5))
        def report(job: brooq.Job) -> object:
            if job.id != self.long_id:  # left over by an interrupted run on the same database
                return {"skipped": "not this run's"}
            started = time.monotonic()
            if job.canceled.wait(float(job.payload["seconds"])):
                self.say(_("demo.saw_canceled", id=job.id, seconds=time.monotonic() - started))
                return None
            return {"pages": 12}

        return worker

    # --- the two helper connections -------------------------------------------------

    def cancel_long_job(self) -> None:
        """From a second connection: wait until the long job runs, then cancel it."""
        try:
            with psycopg.connect(self.dsn, autocommit=True) as conn:
                while not self.finished.is_set():
                    state = conn.cursor(row_factory=scalar_row).execute(
                        queries.DEMO_JOB_STATE, [self.long_id]).fetchone()
                    if state == "processing":
                        break
                    time.sleep(0.05)
                else:
                    return
                time.sleep(1.0)
                canceled = brooq.cancel(conn, self.long_id)
                self.say(_("demo.canceled_it", id=self.long_id, result=str(canceled).lower()))
        except Exception as exc:  # noqa: BLE001 - reported, and the demo goes on
            self.say(_("demo.cancel_failed", error=describe(exc)))

    def watch(self, worker: brooq.Worker, ids: list[int]) -> None:
        """Stop the worker once every job is terminal, or at the timeout."""
        deadline = time.monotonic() + self.timeout
        try:
            with psycopg.connect(self.dsn, autocommit=True) as conn:
                while not self.finished.is_set():
                    if unfinished(conn, ids) == 0:
                        break
                    if time.monotonic() > deadline:
                        self.timed_out = True
                        break
                    self.finished.wait(0.1)
        except Exception as exc:  # noqa: BLE001
            self.error = exc
        finally:
            worker.stop()

    # --- the run ----------------------------------------------------------------------

    def run(self) -> int:
        plan = self.plan
        enqueued = self.enqueued = enqueue_from_sql(self.dsn, plan)
        ids = enqueued.all
        self.long_id = enqueued.ids["long"][0]
        self.out.write(_("demo.enqueued", topics=len(TOPICS), jobs=len(ids), tool=enqueued.tool,
                         seconds=enqueued.seconds) + "\n")
        for label, sql in enqueued.statements:
            if not label.startswith("topic "):
                self.out.write(f"    {sql};  -- {len(enqueued.ids[label])} {_describe_kind(label)}\n")
        self.out.write(_("demo.worker", concurrency=CONCURRENCY, lease=LEASE.total_seconds()) + "\n")
        self.out.flush()

        worker = self.build_worker()
        if self.progress_mode != "off":
            live = {"auto": None, "live": True, "log": False}[self.progress_mode]
            self.progress = Progress(worker.snapshot, self.out, live=live, log_every=1.0,
                                     window=1.0, prefix="  ")
        watcher = threading.Thread(target=self.watch, args=(worker, ids), daemon=True)
        canceler = threading.Thread(target=self.cancel_long_job, daemon=True)
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            self.started_at = conn.cursor(row_factory=scalar_row).execute(
                queries.DEMO_CLOCK).fetchone()
        started = time.monotonic()
        if self.progress is not None:
            self.progress.start()
        watcher.start()
        canceler.start()
        quiet = logging.getLogger("brooq.worker")
        quiet.addFilter(expected_failures)  # the fate table shows them; others still reach stderr
        try:
            worker.run()
        finally:
            quiet.removeFilter(expected_failures)
            self.finished.set()
            elapsed = time.monotonic() - started
            progress, self.progress = self.progress, None
            if progress is not None:
                progress.stop()
            watcher.join(timeout=5)
            canceler.join(timeout=5)
        if self.error is not None:
            raise self.error
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            left = unfinished(conn, ids)
        if left == 0:
            self.out.write(_("demo.all_terminal", seconds=elapsed) + "\n")
        elif self.timed_out:
            self.out.write(_n("demo.timeout", left, timeout=self.timeout) + "\n")
        else:
            self.out.write(_n("demo.interrupted", left, seconds=elapsed) + "\n")
        self.interrupted = left > 0 and not self.timed_out
        snap = worker.snapshot()
        return self.report(ids, snap, elapsed)

    def report(self, ids: list[int], snap: WorkerSnapshot, elapsed: float) -> int:
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            by_state = conn.cursor(row_factory=class_row(FateByState)).execute(
                queries.DEMO_FATE_BY_STATE, [ids]).fetchall()
            by_topic = conn.cursor(row_factory=class_row(FateByTopic)).execute(
                queries.DEMO_FATE_BY_TOPIC, [ids]).fetchall()
            extra = conn.cursor(row_factory=class_row(DelayedAndFirst)).execute(
                queries.DEMO_DELAYED_AND_VIP, {"ids": ids, "delayed": self.plan_ids("delayed"),
                                               "vip": self.plan_ids("vip")}).fetchone()
            busy_ids = [i for k in ("email", "flaky", "doomed", "vip") for i in self.plan_ids(k)]
            busy = conn.cursor(row_factory=class_row(Busy)).execute(
                queries.DEMO_BUSY, {"ids": busy_ids, "start": self.started_at}).fetchone()
        order: dict[str, int] = {s: i for i, s in enumerate((*TERMINAL, *CANCELABLE))}
        by_state.sort(key=lambda r: order.get(r.state, 99))
        self.out.write("\n" + _("demo.fate_title", count=len(ids)) + "\n")
        self.out.write(format_table(
            [_("col.state"), _("demo.col.jobs"), _("demo.col.avg_attempts"),
             _("demo.col.example_error")],
            [[r.state, r.jobs, f"{r.avg_attempts:.2f}", _cut(r.last_error)] for r in by_state]) + "\n\n")
        self.out.write(format_table(
            [_("col.topic"), _("demo.col.jobs"), *TERMINAL, _("demo.col.other"),
             _("demo.col.avg_attempts")],
            [[r.topic, r.jobs, *(getattr(r, s) for s in TERMINAL), r.other, f"{r.avg_attempts:.2f}"]
             for r in by_topic]) + "\n\n")
        if extra is not None:
            delayed_after, vip_rank, email_done = extra.delayed_after, extra.vip_rank, extra.email_done
            if delayed_after is not None:
                self.out.write(_n("demo.delayed", len(self.plan_ids("delayed")),
                                  delay=_interval(DELAY), seconds=delayed_after) + "\n")
            if vip_rank is not None:
                self.out.write(_("demo.priority", count=len(self.plan_ids("vip")), rank=vip_rank,
                                 done=email_done) + "\n")
        attempts = settled(snap)
        finished = sum(r.jobs for r in by_state if r.state in TERMINAL)
        if busy is not None and busy.jobs and busy.seconds:
            jobs, busy_attempts, seconds = busy.jobs, int(busy.attempts or 0), busy.seconds
            self.out.write(_("demo.throughput", jobs=jobs, attempts=busy_attempts, seconds=seconds,
                             jobs_rate=jobs / seconds, attempts_rate=busy_attempts / seconds)
                           + "\n")
        rate = finished / elapsed if elapsed > 0 else 0.0
        self.out.write(_("demo.overall", jobs=finished, attempts=attempts, seconds=elapsed,
                         rate=rate, delay=_interval(DELAY)) + "\n")
        if self.interrupted:
            return 130
        counts = {r.state: r.jobs for r in by_state}
        expected = self.plan.expected()
        wrong = {s: (counts.get(s, 0), n) for s, n in expected.items() if counts.get(s, 0) != n}
        if wrong:
            detail = ", ".join(_("demo.expected_got", state=s, got=got, want=want)
                               for s, (got, want) in wrong.items())
            self.out.write(_("demo.not_as_planned", detail=detail) + "\n")
            return 1
        self.out.write(_("demo.as_expected", done=expected["done"], dead=expected["dead"],
                         canceled=expected["canceled"]) + "\n")
        return 0

    def plan_ids(self, label: str) -> list[int]:
        return self.enqueued.ids.get(label, [])


def unfinished(conn: psycopg.Connection[Any], ids: list[int]) -> int:
    """How many of these jobs are not terminal yet."""
    count = conn.cursor(row_factory=scalar_row).execute(queries.DEMO_UNFINISHED, [ids]).fetchone()
    return int(count or 0)


@dataclass(frozen=True)
class FateByState:
    state: str
    jobs: int
    avg_attempts: float
    last_error: str | None  # an example


@dataclass(frozen=True)
class FateByTopic:
    topic: str
    jobs: int
    done: int
    dead: int
    canceled: int
    other: int
    avg_attempts: float


@dataclass(frozen=True)
class DelayedAndFirst:
    delayed_after: float | None  # seconds from enqueue to done, the earliest delayed job
    vip_rank: int | None  # by which rank the last priority job was done
    email_done: int


@dataclass(frozen=True)
class Busy:
    jobs: int
    attempts: int | None
    seconds: float | None


def _describe_kind(label: str) -> str:
    if label == "delayed":
        return _("demo.kind.delayed", seconds=DELAY.total_seconds())
    kinds = {"long": _("demo.kind.long"), "email": _("demo.kind.email"),
             "flaky": _("demo.kind.flaky"), "doomed": _("demo.kind.doomed"),
             "vip": _("demo.kind.vip")}
    return kinds.get(label) or _("demo.kind.jobs")


def _cut(text: str | None, width: int = 60) -> str:
    if not text:
        return "-"
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"


def _safe_dsn(dsn: str) -> str:
    try:
        params = psycopg.conninfo.conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        return _("demo.the_dsn_given")
    if "password" in params:
        params["password"] = "***"
    return psycopg.conninfo.make_conninfo(**params)  # type: ignore[arg-type]


def prepare(dsn: str, out: TextIO) -> None:
    """Deploy the schema unless it is there already."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        deployed = conn.cursor(row_factory=scalar_row).execute(queries.DEMO_HAS_SCHEMA).fetchone()
    if deployed:
        out.write(_("demo.schema_present") + "\n")
        return
    done = deploy(dsn)
    changes = sum(1 for line in done.output.splitlines() if line.lstrip().startswith("+ "))
    out.write((_("demo.deployed_sqitch", count=changes) if done.method == "sqitch"
               else _("demo.deployed_psql")) + "\n")


def throwaway_cluster() -> Cluster:
    """A durable throwaway cluster (brooq.tools.cluster), from the server binaries here."""
    try:
        return Cluster(durable=True)
    except NoServer:
        raise RuntimeError(_("demo.no_server")) from None


def run_demo(dsn: str | None, *, jobs: int = 5000, timeout: float = 90.0,
             out: TextIO | None = None, progress: str = "auto") -> int:
    """The demo; returns the exit status (0: every job ended as planned)."""
    out = out or sys.stdout
    plan = Plan.for_total(jobs)
    out.write(_("demo.title") + "\n")
    cluster: Cluster | None = None
    try:
        if dsn is None:
            cluster = throwaway_cluster()
            out.write(_("demo.starting_cluster", port=cluster.port, root=cluster.root) + "\n")
            out.flush()
            cluster.start()
            dsn = cluster.dsn
        else:
            out.write(_("demo.using", dsn=_safe_dsn(dsn)) + "\n")
        prepare(dsn, out)
        demo = Demo(dsn, plan, out, timeout=timeout, progress=progress)
        return demo.run()
    except (DeployError, RuntimeError) as exc:
        sys.stderr.write(_("demo.error", reason=exc) + "\n")
        return 1
    except subprocess.CalledProcessError as exc:
        detail = " ".join(str(exc.stderr or exc.stdout or "").split())
        command = " ".join(map(str, exc.cmd))
        sys.stderr.write(_("demo.error", reason=_("demo.command_failed", command=command,
                                                  detail=detail)) + "\n")
        return 1
    except (psycopg.Error, brooq.BrooqError) as exc:
        sys.stderr.write(_("demo.error", reason=describe(exc)) + "\n")
        return 1
    finally:
        if cluster is not None:
            cluster.stop()
            out.write(_("demo.cluster_removed") + "\n")
        out.flush()

