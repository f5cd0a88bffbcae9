"""The brooq worker: one loop that claims, runs handlers, settles and renews leases.

It decides nothing about a job's fate: brooq.claim, brooq.settle_many, brooq.settle,
brooq.heartbeat and brooq.reap do. Threads:

- the loop (the thread that calls run()): owns one autocommit connection and is
  the only one to use it. Each turn it settles finished attempts in one
  settle_many, renews leases every lease/3, reaps every reap_interval, and claims
  as many jobs as it has free slots plus `prefetch`: claimed jobs wait, leased, in the
  pool's queue, so a free thread starts the next one while the loop's round trip runs.
  No transaction stays open while a handler runs.
- the listener: its own connection, LISTEN brooq; wakes the loop when a job of one
  of our topics is enqueued (polling every poll_interval is the fallback).
- handlers: sync ones in a pool of `concurrency` daemon threads, async ones on an
  asyncio loop in its own thread. They only hand their outcome back to the loop.
- the metrics HTTP server, when metrics_address is set.

A lost connection is never a job failure: the loop reconnects with exponential
backoff, handlers keep running, and their outcomes are settled once the
connection is back (the lease token makes a late settle safe: if the lease was
lost meanwhile, nothing is written).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import gc
import inspect
import logging
import random
import signal
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from datetime import timedelta
from types import FrameType
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

import psycopg

from brooq import queries, tracing
from brooq._version import __version__
from brooq.attempt import QUEUED, SKIPPED, STARTED, Attempt, TopicHandler
from brooq.compat import check_schema
from brooq.config import WorkerConfig, format_duration, parse_address
from brooq.counters import Counters
from brooq.errors import (
    FATAL_SQLSTATES,
    WORKER,
    BrooqError,
    ConfigError,
    ConnectError,
    PermissionDenied,
    RunAtImport,
    mapped,
    translate,
    who,
)
from brooq.executors import AsyncRunner, ThreadPool, Waker
from brooq.job import Job
from brooq.leases import Leases
from brooq.listener import RECONNECT_MAX, Listener, backoff
from brooq.messages import _
from brooq.nometrics import NoMetrics
from brooq.outcome import Outcome, of_exception, of_return
from brooq.payload import Undecodable, register_loaders
from brooq.producer import declare_topic
from brooq.redact import one_line
from brooq.rows import fields_row
from brooq.settler import Settler, SettleThread, log_extra
from brooq.signals import find_signal
from brooq.snapshot import TopicSnapshot, WorkerSnapshot
from brooq.typed import with_payload
from brooq.watchdog import Watchdog

if TYPE_CHECKING:
    from brooq.metrics import Metrics, MetricsServer

log = logging.getLogger("brooq.worker")

F = TypeVar("F", bound=Callable[..., Any])

CHECK_EVERY = 0.1  # seconds between scans for timeouts and hung handlers
# Outcomes not yet written, in capacities, before they hold claims back (Worker._free):
# with one, a batch being written and the next one's outcomes stopped the claims, and
# the database's two connections took turns; two let a claim run beside a settle, three
# also ride out a settle slowed by its commit's flush (docs/performance.md, 1 December:
# one process's drain +10-25% with two, +8-18% more with three; 0.7 MiB more at its peak).
UNSETTLED_CAPACITIES = 3
# An attempt is stopped this long before the job's max_execution deadline (at most a
# tenth of the time left): the deadline ends the lease, and the worker's own settle,
# which names the cause, must reach the database before a heartbeat or a reap sees
# the lease end.
EXECUTION_MARGIN = 2 * CHECK_EVERY
GATHER_GAP = 0.0005  # seconds: a claim waits this long after the last finished handler...
GATHER_MAX = 0.002  # ...and at most this long after the first (see Worker._claim_at)
MAX_SLEEP = 1.0  # the loop turns at least this often (health, stop requests)
REAP_BATCH = 1000
REMIND_EVERY = 60.0  # seconds between "still no database connection" warnings
CONNECT_HINT = ("check the DSN (brooq.Worker(dsn), --dsn or BROOQ_DSN): host, port, database "
                "name, user and password, and that the server is up; a worker that has never "
                "connected does not retry")
# A prefetched job starts only on a lease confirmed this recently (its claim, or a
# heartbeat that kept it); an older one is checked first, in one heartbeat for all
# such jobs. This bounds how long after a cancel (or a reap) a handler may start.
START_CONFIRM = 0.1  # seconds


class Reaped(NamedTuple):
    """A row of brooq.reap: a job whose expired lease went back to the queue."""

    id: int
    topic: str


# Set while `brooq worker MODULE:OBJECT` imports MODULE: a worker.run() then would run
# the worker inside the import, before the command could (see loading()).
_loading: contextvars.ContextVar[str | None] = contextvars.ContextVar("brooq_loading", default=None)


@contextlib.contextmanager
def loading(spec: str) -> Iterator[None]:
    """Within this block (a tool importing the module of ``spec``), Worker.run() raises
    RunAtImport instead of running."""
    token = _loading.set(spec)
    try:
        yield
    finally:
        _loading.reset(token)


def _metrics(counts: Counters) -> Metrics | NoMetrics:
    """Prometheus metrics when prometheus-client is installed (the extra brooq[metrics])."""
    try:
        from brooq.metrics import Metrics
    except ImportError:
        return NoMetrics()
    return Metrics(counts)


class Worker:
    """Runs handlers for jobs of the topics it registers. See docs/python-guide.md.

    ``settings`` are fields of brooq.WorkerConfig (concurrency, lease, ...). Every
    setting not given here comes from its BROOQ_* environment variable, then from the
    default (WorkerConfig declares each one); a setting given on the `brooq worker`
    command line wins over all of them. Up to concurrency + prefetch jobs are claimed at
    once: the prefetched ones wait, leased, for a free handler thread (sync handlers
    only; see docs/python-guide.md).

    The worker's rooms: this loop claims and dispatches; a Settler (brooq.settler)
    writes outcomes, Leases (brooq.leases) renew and lose leases, a Listener
    (brooq.listener) wakes the loop on NOTIFY.
    """

    def __init__(self, dsn: str | None = None, **settings: Any) -> None:
        self._setup(WorkerConfig.from_env(dsn=dsn, **settings))

    @classmethod
    def from_config(cls, config: WorkerConfig) -> Worker:
        """A worker with exactly these settings (validated; the environment is not read,
        the `brooq worker` command line still wins)."""
        config = config.with_command_line()
        config.validate()
        worker = cls.__new__(cls)
        worker._setup(config)
        return worker

    def _setup(self, config: WorkerConfig) -> None:
        self.config = c = config.with_defaults()
        assert c.name is not None
        self.name: str = c.name
        self._counts = Counters(slots=c.concurrency)
        self._metrics: Metrics | NoMetrics | None = None  # made when first read (see metrics)
        self._handlers: dict[str, TopicHandler] = {}
        self._max_execution: dict[str, timedelta | None] = {}  # read from the database at start
        self._lock = threading.Lock()
        self._waker = Waker()
        self._started = False  # run() was called: no more handlers
        self._active = False  # run() is running now
        self._new_run()
        self._reap_every = c.effective_reap_interval.total_seconds()
        self._poll_every = c.poll_interval.total_seconds()
        self._stats_every = c.stats_interval.total_seconds()
        self._hung_grace = c.hung_grace.total_seconds()
        self._concurrency = c.concurrency
        self._prefetch = c.effective_prefetch  # 0 when a handler is async (see _start_services)
        self._capacity = c.concurrency + self._prefetch  # jobs held: running plus prefetched
        self._claim_half = max(1, self._capacity // 2)
        self._queued = 0  # prefetched jobs no thread has started yet (under _lock)
        self._statement_timeout_ms = max(1000, int(c.lease.total_seconds() * 500))
        # a turn with no answer for longer than a statement may take: a silent connection
        self._watchdog = Watchdog(self.name, self._statement_timeout_ms / 1000 + 1.0)
        self._settle_watchdog = Watchdog(self.name, self._watchdog.limit)  # the settling connection's

    def _new_run(self) -> None:
        """The state of one run, fresh: at setup, and after each run so that a stopped
        worker can run() again (its counters and metrics go on)."""
        c = self.config
        self._completions: deque[tuple[Attempt, Outcome]] = deque()
        self._unconfirmed: deque[Attempt] = deque()  # prefetched, to confirm before they start
        self._running: set[Attempt] = set()
        self._leases = Leases(self.name, c.lease, self._counts, on_lost=self._lost)
        self._settler = Settler(self.name, self._counts, release=self._leases.release)
        self._settling = SettleThread(self._settler, self._settle_connect, self._waker.wake,
                                      lambda conn: self._settle_watchdog.guard(conn))
        self._listener = Listener(self.name, (), self._waker.wake)
        self._job_rows = fields_row(Job)
        self._reaped_rows = fields_row(Reaped)
        self._conn: psycopg.Connection[Any] | None = None
        self._declared = False
        self._failures = 0
        self._connected_once = False  # before: a failure to connect is a configuration error
        self._lost_at = 0.0  # when the connection was lost (monotonic), while it is
        self._next_reminder = 0.0
        self._next_connect = 0.0
        self._more = True
        self._next_poll = 0.0
        self._gather_from: float | None = None  # when the first handler since the last claim finished
        self._last_done = 0.0
        # A claim came back with jobs but not full, and what it and later claims took may
        # still be settled: each settle written asks for a claim (see _loop) ...
        self._partial = False
        self._freed = 0  # ... of at most one job per outcome written since the last claim
        self._next_reap = 0.0
        self._next_stats = 0.0
        self._next_check = 0.0
        self._stop_requested = False
        self._abort_requested = False
        self._stop_grace: timedelta | None = None
        self._stopping = False
        self._grace_deadline = 0.0
        self._started_at = 0.0
        self._last_tick = 0.0
        self._closing = threading.Event()  # a new one: an old listener thread still sees its own
        self._pool: ThreadPool | None = None
        self._async: AsyncRunner | None = None
        self._listening: threading.Thread | None = None
        self._server: MetricsServer | None = None
        self._fatal: BaseException | None = None

    def _leave_run(self) -> None:
        """After a run: what a stop cut short (handlers past the grace) is left to its
        lease; an old pool thread finds its queued attempts withdrawn and a late
        outcome is ignored (it is in no run's _running), then the state is fresh."""
        with self._lock:
            for att in self._running:
                att.closed = True
                if att.phase == QUEUED:
                    att.phase = SKIPPED
            self._queued = 0
        self._new_run()

    # --- registration -------------------------------------------------------------

    def handler(self, topic: str, *, max_attempts: int = 5,
                backoff_base: timedelta = timedelta(seconds=1),
                backoff_max: timedelta = timedelta(minutes=1),
                retention: timedelta = timedelta(days=30), max_payload_bytes: int = 1 << 20,
                notify: bool = True,
                timeout: timedelta | None = timedelta(minutes=1),
                max_lease_losses: int = 5,
                max_lease: timedelta = timedelta(hours=1),
                max_in_flight: int | None = None, rate: int | None = None,
                per: timedelta | None = None,
                max_execution: timedelta | None = None, retain_done: bool = True,
                retain_payload: bool = True) -> Callable[[F], F]:
        """Register the decorated function as the handler of ``topic``.

        The topic settings are declared in the database when the worker starts
        (brooq.declare_topic), so producers in any language get the same policy.
        ``timeout`` bounds one attempt (None: no limit): past it the job's
        ``canceled`` is set and the attempt is settled as failed. ``max_lease`` bounds the
        lease any worker may take on the topic's jobs: this worker's lease must fit in it.
        ``max_in_flight``, ``rate`` and ``per`` are the topic's flow limits, enforced by
        brooq.claim across all workers (None: no limit; see declare_topic). Every worker
        declares them at start: give every worker of the topic the same ones.
        ``max_execution`` bounds a job across all its attempts, from its first claim (None:
        no limit): past it the attempt running is stopped and settled as failed (naming
        max_execution), and every later attempt fails at once without running the handler,
        until the attempts are spent. At start the worker refuses a ``timeout`` longer than
        the topic's max_execution as the database holds it.
        ``retain_done=False`` deletes a job as it is settled done; ``retain_payload=False``
        clears the payload of a job that is done, dead or canceled (see declare_topic).
        """
        if self._started:
            raise RuntimeError("register handlers before run()")
        if topic in self._handlers:
            raise ValueError(f"topic {topic!r} already has a handler")
        if timeout is not None and timeout <= timedelta(0):
            raise ConfigError([f"handler {topic!r}: timeout must be positive or None"])
        if max_execution is not None and max_execution <= timedelta(0):
            raise ConfigError([f"handler {topic!r}: max_execution must be positive or None"])
        if self.config.lease > max_lease:
            raise ConfigError([(f"handler {topic!r}: the worker's lease {format_duration(self.config.lease)} "
                                f"is longer than the topic's max_lease {format_duration(max_lease)}")])

        def register(fn: F) -> F:
            self._handlers[topic] = TopicHandler(
                topic, with_payload(fn), inspect.iscoroutinefunction(fn), timeout, max_attempts, backoff_base,
                backoff_max, retention, max_payload_bytes, notify, max_lease_losses, max_lease,
                max_in_flight, rate, per, max_execution, retain_done, retain_payload)
            self._add_topic(topic)
            return fn

        return register

    def _add_topic(self, topic: str) -> None:
        """Count the jobs of a registered topic (and show its series at zero)."""
        self._counts.add_topic(topic)
        if self._metrics is not None:
            self._metrics.declare_topic(topic)

    @property
    def metrics(self) -> Metrics | NoMetrics:
        """The worker's Prometheus metrics (``.registry``), made when first read: a worker
        that nobody scrapes never imports prometheus-client. Without it installed, a
        NoMetrics whose families record nothing."""
        if self._metrics is None:
            self._metrics = _metrics(self._counts)
        return self._metrics

    @property
    def topics(self) -> list[str]:
        return list(self._handlers)

    def declare_topics(self) -> None:
        """Declare the registered topics now (run() does it at start), e.g. at deploy time,
        so producers can enqueue before the first worker runs. Needs brooq_admin."""
        with psycopg.connect(self.config.dsn, autocommit=True) as conn:
            for h in self._handlers.values():
                self._declare(conn, h)

    @staticmethod
    def _declare(conn: psycopg.Connection[Any], h: TopicHandler) -> None:
        declare_topic(conn, h.topic, max_attempts=h.max_attempts, backoff_base=h.backoff_base,
                      backoff_max=h.backoff_max, retention=h.retention,
                      max_payload_bytes=h.max_payload_bytes, notify=h.notify,
                      max_lease_losses=h.max_lease_losses, max_lease=h.max_lease,
                      max_in_flight=h.max_in_flight, rate=h.rate, per=h.per,
                      max_execution=h.max_execution,
                      retain_done=h.retain_done, retain_payload=h.retain_payload)

    # --- control from other threads -----------------------------------------------

    def stop(self, grace: timedelta | None = None) -> None:
        """Stop gracefully: claim no more, let running handlers finish within ``grace``
        (default: shutdown_grace), then stop renewing their leases. Safe from any thread;
        a second call stops at once."""
        if self._stop_requested:
            self._abort_requested = True
        self._stop_grace = grace
        self._stop_requested = True
        self._waker.wake()

    def snapshot(self) -> WorkerSnapshot:
        """The worker's counters now (cheap; for progress displays)."""
        queued = self._queued  # claimed, not started: not "in flight" (handlers running now)
        topics = {t: c.snapshot() for t, c in list(self._counts.topics.items())}
        totals = {f.name: sum(getattr(t, f.name) for t in topics.values())
                  for f in dataclasses.fields(TopicSnapshot)}
        return WorkerSnapshot(
            name=self.name, **totals, in_flight=len(self._running) - queued, prefetched=queued,
            started_at=self._started_at,
            connected=self._conn is not None, stopping=self._stop_requested, topics=topics)

    @property
    def metrics_url(self) -> str | None:
        """http://host:port of the metrics server while it runs (the real port when 0 was asked)."""
        return None if self._server is None else self._server.url

    def health(self) -> str | None:
        """None when healthy, else why not (what /healthz answers)."""
        if not self._active or self._closing.is_set():
            return "the worker is not running"
        if self._conn is None:
            return "no database connection"
        stale = time.monotonic() - self._last_tick
        if stale > 5.0 + self._statement_timeout_ms / 1000:
            return f"the worker loop has not run for {stale:.0f}s"
        return None

    # --- run ----------------------------------------------------------------------

    def run(self) -> None:
        """Work until stop() or SIGTERM/SIGINT (handled when called in the main thread).

        A worker can run() again once a run has returned (one run at a time); its
        counters and metrics go on. A stop() between two runs stops the next one."""
        if (spec := _loading.get()) is not None:
            module = spec.partition(":")[0]
            raise RunAtImport(
                f"module {module!r} runs worker.run() as it is imported, and `brooq worker {spec}` "
                "runs the worker itself: put worker.run() under `if __name__ == \"__main__\":`")
        with self._lock:
            if self._active:
                raise RuntimeError("this worker is running already: one run() at a time")
            if not self._handlers:
                raise ConfigError(["no handlers: register one with @worker.handler(topic)"])
            self._active = self._started = True
        self._started_at = time.monotonic()
        fatal: BaseException | None = None
        try:
            previous = self._install_signals()
            # Every object made before the run (modules, the app, their data) leaves the
            # cyclic GC's reach, so that a full collection walks only what the run
            # makes: in a drain of 100,000 jobs its pauses fell from 15-19 ms to ~1 ms, and
            # the GC's share of the drain from 7% to 3%. Given back when the run ends.
            gc.freeze()
            try:
                self._start_services()
                log.info(_("worker.started", worker=self.name, topics=", ".join(self._handlers),
                           concurrency=self._concurrency,
                           lease=format_duration(self.config.lease)))
                self._loop()
            finally:
                self._closing.set()
                self._stop_services()
                self._restore_signals(previous)
                gc.unfreeze()
                fatal = self._fatal
        finally:
            self._leave_run()  # run() may be called again (after a stop, or a fatal error)
            self._active = False
        if fatal is not None:  # a configuration problem: retrying cannot help
            raise fatal.with_traceback(None)  # its line, not the loop's frames

    def _install_signals(self) -> dict[int, Any]:
        if threading.current_thread() is not threading.main_thread():
            return {}
        previous: dict[int, Any] = {}
        for signum in (signal.SIGTERM, signal.SIGINT):
            previous[signum] = signal.signal(signum, self._on_signal)
        return previous

    def _restore_signals(self, previous: dict[int, Any]) -> None:
        for signum, handler in previous.items():
            signal.signal(signum, handler)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        # Runs in the main thread between two bytecodes: set flags, write a pipe, nothing else.
        if self._stop_requested:
            self._abort_requested = True
        self._stop_requested = True
        self._waker.wake()

    def _start_services(self) -> None:
        self._settling.start(self.name)
        if any(not h.is_async for h in self._handlers.values()):
            self._pool = ThreadPool(self._concurrency, f"brooq-{self.name}")
        if any(h.is_async for h in self._handlers.values()):
            self._async = AsyncRunner(f"brooq-async-{self.name}")
            # async handlers start as soon as claimed (no pool queue to wait in): no prefetch
            self._prefetch = 0
            self._capacity = self._concurrency
            self._claim_half = max(1, self._capacity // 2)
        if self.config.metrics_address is not None:
            # validated at start: prometheus-client is installed
            from brooq.metrics import Metrics, MetricsServer

            host, port = parse_address(self.config.metrics_address)
            assert isinstance(self.metrics, Metrics)
            self._server = MetricsServer(self.metrics, self.health, host, port)
            self._server.start()
            log.info(_("worker.metrics", worker=self.name, url=self._server.url))
        listen_dsn = self.config.effective_listen_dsn
        if listen_dsn is None:  # listen=false: poll only (docs/operations.md, PgBouncer)
            return
        self._listener = Listener(self.name, self._handlers, self._waker.wake)
        # LISTEN is session state: on listen_dsn, a direct connection when the dsn is pooled
        self._listening = threading.Thread(
            target=self._listener.run, args=(listen_dsn, self._connect_kwargs(), self._closing),
            name=f"brooq-listen-{self.name}", daemon=True)
        self._listening.start()

    def _stop_services(self) -> None:
        for att in list(self._running):
            self._cancel_attempt(att, "shutdown", time.monotonic())
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if self._pool is not None:
            self._pool.stop()
        if self._async is not None:
            self._async.stop()
        if self._server is not None:
            self._server.stop()
        if self._listening is not None:
            self._listening.join(timeout=2.0)
        self._settling.stop()
        self._watchdog.stop()
        self._settle_watchdog.stop()
        for counts in self._counts.topics.values():
            counts.busy = 0

    # --- the loop -----------------------------------------------------------------

    def _loop(self) -> None:
        while True:
            now = time.monotonic()
            self._last_tick = now
            self._drain(now)
            if (written := self._settling.collect()) and self._partial:
                # settles may have made jobs ready that no enqueue notifies: an ordered
                # group's next job, a max_in_flight slot freed. Claim again.
                self._freed += written
                self._more = True
            if self._settling.fatal is not None:  # the settling connection lacks a right
                self._fatal = self._settling.fatal
                log.error(_("worker.fatal", worker=self.name, error=self._fatal))
                return
            if self._stop_requested and not self._stopping:
                self._begin_stop(now)
            if self._stopping:
                if self._abort_requested or now >= self._grace_deadline:
                    self._abort(now)
                    return
                if not self._running and not self._settler and not self._settling.in_flight:
                    log.info(_("worker.stopped", worker=self.name))
                    return
            if self._running and now >= self._next_check:
                self._check_attempts(now)
            if self._conn is None and now >= self._next_connect:
                self._connect(now)
            if self._conn is not None:
                try:
                    with self._watchdog.guard(self._conn):
                        self._turn(self._conn, now)
                except psycopg.Error as exc:
                    if exc.sqlstate in FATAL_SQLSTATES:  # unknown topic, missing rights
                        self._fatal = translate(exc, WORKER, who(self._conn)) or exc
                        log.error(_("worker.fatal", worker=self.name, error=self._fatal))
                        return
                    self._lost_connection(exc)
                except Exception as exc:  # a bug of ours must not kill the worker
                    log.exception(_("worker.loop_error", worker=self.name))
                    self._lost_connection(exc)
            if self._fatal is not None:
                return
            if self._settler:  # written on the settling thread's connection (SettleThread)
                self._settling.hand(self._settler.take())
            self._waker.wait(self._sleep_time(time.monotonic()))

    def _turn(self, conn: psycopg.Connection[Any], now: float) -> None:
        claim_at = self._claim_at(now)
        if claim_at is not None and claim_at <= now:
            self._claim(conn, now)  # first: the jobs start while the rest of the turn runs
        if self._leases.due(now):
            self._leases.heartbeat(conn, now)
        if self._unconfirmed:
            self._confirm_prefetched(conn, now)
        if now >= self._next_reap:
            self._reap(conn, now)
        if self._server is not None and now >= self._next_stats:
            self._next_stats = now + self._stats_every
            self.metrics.refresh_stats(conn, list(self._handlers))

    def _sleep_time(self, now: float) -> float:
        at = now + MAX_SLEEP
        if self._stopping:
            at = min(at, self._grace_deadline)
        if self._running:
            at = min(at, self._next_check)
        if self._conn is None:
            at = min(at, self._next_connect)
        else:
            claim_at = self._claim_at(now)
            if claim_at is not None:
                at = min(at, claim_at)
            if self._leases:
                at = min(at, self._leases.next_heartbeat)
            at = min(at, self._next_reap)
            if self._server is not None:
                at = min(at, self._next_stats)
        return at - now

    def _claim_at(self, now: float) -> float | None:
        """When to claim next (None: no free slot, or stopping).

        At once when jobs are known to be ready (the last claim came back full, a
        notification came, settles were written after a partial claim: see _loop)
        and at least half the slots are free or none is busy; otherwise at the poll
        interval. With fewer slots free, wait while handlers
        keep finishing (each one pushes the claim GATHER_GAP later, GATHER_MAX at
        most after the first): one claim of many jobs costs about what a claim of
        one costs (a round trip)."""
        if self._stopping:
            return None
        free = self._free()
        if free <= 0:
            return None
        at = self._next_poll
        if self._more:
            at = now
        elif (woken := self._listener.claim_at(now)) is not None:
            at = min(at, woken)
        if free < self._claim_half and self._running and self._gather_from is not None:
            at = max(at, min(self._last_done + GATHER_GAP, self._gather_from + GATHER_MAX))
        return at

    # --- connection ---------------------------------------------------------------

    def _connect_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"autocommit": True, "connect_timeout": 10,
                                  "keepalives": 1, "keepalives_idle": 10,
                                  "keepalives_interval": 5, "keepalives_count": 3}
        if "application_name" not in psycopg.conninfo.conninfo_to_dict(self.config.dsn):
            kwargs["application_name"] = f"brooq worker {self.name}"[:63]
        if self.config.transaction_pooler:
            # psycopg prepares a statement run 5 times on the server connection of the
            # moment; PgBouncer in transaction mode (before 1.21's max_prepared_statements)
            # hands the next one to another: "prepared statement _pg3_0 does not exist"
            kwargs["prepare_threshold"] = None
        return kwargs

    def _connect(self, now: float) -> None:
        try:
            conn = psycopg.connect(self.config.dsn, **self._connect_kwargs())
        except psycopg.Error as exc:
            if not self._connected_once:  # the DSN is wrong, or the server is not up
                self._fatal = ConnectError(
                    f"cannot connect to the database: {one_line(exc, 300) or type(exc).__name__}"
                    f" (hint: {CONNECT_HINT})", hint=CONNECT_HINT)
                return
            self._lost_connection(exc)
            return
        try:
            register_loaders(conn)
            if not self.config.transaction_pooler:
                # session state: through a pooler it would stay on a server connection that
                # other clients get next; there the role's statement_timeout bounds statements
                conn.execute(queries.SET_STATEMENT_TIMEOUT, [str(self._statement_timeout_ms)])
            if not self._declared:
                self._declare_topics(conn)
        except BrooqError:
            conn.close()
            return  # a topic setting the database refuses: _fatal is set, run() raises it
        except psycopg.Error as exc:
            conn.close()
            self._lost_connection(exc)
            return
        self._conn = conn  # connected, topics declared
        self._connected_once = True
        if self._failures:
            log.info(_("worker.reconnected", worker=self.name,
                       seconds=time.monotonic() - self._lost_at))
        self._failures = 0
        self._leases.renew_soon(time.monotonic())  # leases may have run short while we were away
        self._more = True

    def _settle_connect(self) -> psycopg.Connection[Any]:
        """The settling thread's connection (SettleThread): the loop's settings, no topics."""
        conn = psycopg.connect(self.config.dsn, **self._connect_kwargs())
        if not self.config.transaction_pooler:  # see _connect
            try:
                conn.execute(queries.SET_STATEMENT_TIMEOUT, [str(self._statement_timeout_ms)])
            except BaseException:
                conn.close()
                raise
        return conn

    def _declare_topics(self, conn: psycopg.Connection[Any]) -> None:
        try:
            schema = check_schema(conn, __version__)
        except BrooqError as exc:  # no schema, an older one, or no right to use it
            self._fatal = exc
            raise
        log.info(_("worker.connected", worker=self.name, version=__version__, schema=schema))
        for h in self._handlers.values():
            try:
                self._declare(conn, h)
            except PermissionDenied:
                # the usual split (docs/operations.md: topics are an admin's): not a warning
                log.info(_("worker.topic_settings_kept", worker=self.name, topic=h.topic))
            except BrooqError as exc:
                self._fatal = ConfigError([f"handler {h.topic!r}: {exc}"])
                raise
        self._check_max_execution(conn)
        self._declared = True

    def _check_max_execution(self, conn: psycopg.Connection[Any]) -> None:
        """Refuse to start when an attempt timeout is longer than its topic's max_execution
        (as the database holds it: declared by us, or by an admin): every such handler in
        one ConfigError."""
        try:
            with mapped(WORKER, conn):  # a role without brooq_worker may not read topic_stats
                rows = conn.execute(queries.TOPIC_MAX_EXECUTION, [list(self._handlers)]).fetchall()
        except PermissionDenied as exc:
            self._fatal = exc
            raise
        self._max_execution = {topic: limit for topic, limit in rows}
        problems = []
        for h in self._handlers.values():
            limit = self._max_execution.get(h.topic)
            if limit is not None and h.timeout is not None and h.timeout > limit:
                problems.append(f"handler {h.topic!r}: timeout {format_duration(h.timeout)} is longer than "
                                f"the topic's max_execution {format_duration(limit)} (a job's time across "
                                "all its attempts): shorten the timeout, or raise max_execution")
        if problems:
            self._fatal = ConfigError(problems)
            raise self._fatal

    def _lost_connection(self, exc: BaseException) -> None:
        if self._fatal is not None:
            return
        self._failures += 1
        delay = backoff(self._failures) * random.uniform(0.5, 1.0)
        now = time.monotonic()
        reason = one_line(exc, 300) or type(exc).__name__
        if self._failures == 1:  # said once; then a reminder every REMIND_EVERY
            self._lost_at = now
            self._next_reminder = now + REMIND_EVERY
            log.warning(_("worker.connection_lost", worker=self.name, reason=reason,
                          max_delay=RECONNECT_MAX))
        elif now >= self._next_reminder:
            self._next_reminder = now + REMIND_EVERY
            log.warning(_("worker.still_disconnected", worker=self.name,
                          seconds=now - self._lost_at, reason=reason))
        else:
            log.debug(_("worker.reconnect_failed", worker=self.name, reason=reason, delay=delay))
        if self._conn is not None:
            with contextlib.suppress(Exception):  # closing a broken connection may fail too
                self._conn.close()
            self._conn = None
        self._settling.renew()
        self._next_connect = time.monotonic() + delay

    # --- claim and dispatch -------------------------------------------------------

    def _free(self) -> int:
        """Slots to claim for: the capacity less the jobs held, and less the outcomes not
        yet written beyond UNSETTLED_CAPACITIES capacities' worth (the settling thread's
        backlog holds claims back, so a database slow to settle slows claiming instead
        of piling up outcomes)."""
        unsettled = len(self._settler) + self._settling.in_flight
        return (self._capacity - len(self._running)
                - max(0, unsettled - UNSETTLED_CAPACITIES * self._capacity))

    def _claim(self, conn: psycopg.Connection[Any], now: float) -> None:
        noted = self._listener.take()
        asked = self._free()
        capped = bool(self._freed) and not noted and now < self._next_poll
        if capped:
            # only settles ask for this claim, and each made at most one job ready. Asking
            # for more than is ready makes claim pass over every job of blocked ordered
            # groups (brooq.claim, "Cost"): 0.7 s a claim with 100,000 jobs in 1,000 groups.
            asked = min(asked, self._freed)
        args = [self.name, list(self._handlers), asked, self.config.lease]
        jobs = conn.cursor(row_factory=self._job_rows).execute(queries.CLAIM, args).fetchall()
        self._claimed(now, asked, jobs, noted and not self._more, capped)

    def _claimed(self, now: float, asked: int, jobs: list[Job], notified: bool, capped: bool) -> None:
        self._gather_from = None
        self._freed = 0
        self._listener.claimed(now, bool(jobs), notified)
        # a capped claim that came back full says nothing of what else is ready: settles
        # to come, a notification or the poll (which it leaves due) ask for the next one
        self._more = len(jobs) == asked and not capped
        if not capped:
            self._partial = len(jobs) < asked
        if not (jobs or self._running or self._settler or self._settling.in_flight):
            self._partial = False  # nothing left whose settle could make a job ready
        if not (self._more or capped):
            self._next_poll = now + self._poll_every
        if not jobs:
            return
        started = time.monotonic()
        coros: list[Coroutine[Any, Any, None]] = []
        queued: list[Attempt] = []  # sync: started by a pool thread when one is free
        for job in jobs:
            att = self._start(job, now)
            if type(job.payload) is Undecodable:  # no handler can take it, no retry fix it
                self._running.discard(att)
                self._undecodable(att)
                continue
            if att.out_of_time(started):  # max_execution spent before this attempt: never run it
                self._running.discard(att)
                self._out_of_time(att, started, before=True)
                continue
            if att.handler.is_async:
                att.begin(started)
                coros.append(self._run_async(att))
            else:
                queued.append(att)
        if queued:
            with self._lock:
                self._queued += len(queued)
            assert self._pool is not None
            for att in queued:
                self._pool.submit(self._run_sync, att)
        if coros:
            assert self._async is not None
            self._async.spawn(coros)
        self._count_busy()

    def _count_busy(self) -> None:
        """Set each topic's busy gauge (Counters): its handlers started and not yet drained."""
        busy = dict.fromkeys(self._handlers, 0)
        for att in self._running:
            if att.phase == STARTED:
                busy[att.job.topic] += 1
        topics = self._counts.topics
        for topic, n in busy.items():
            topics[topic].busy = n

    def _start(self, job: Job, now: float) -> Attempt:
        att = Attempt(job, self._handlers[job.topic])  # begun when its handler starts
        if job.execution_left is not None:  # from `now`, taken before the claim's round trip
            left = job.execution_left.total_seconds()
            att.execution_ends = now + left - min(EXECUTION_MARGIN, left / 10)
        self._leases.hold(att, now)
        self._running.add(att)
        self._counts.topics[job.topic].claimed += 1
        return att

    def _lost(self, att: Attempt, now: float) -> None:
        """Leases' word that an attempt's lease is gone: drop its outcome, stop its handler."""
        self._settler.drop(att)
        if att in self._running:
            log.info(_("job.lease_lost", id=att.job.id, topic=att.job.topic))
            self._cancel_attempt(att, "lease lost", now)

    def _confirm_prefetched(self, conn: psycopg.Connection[Any], now: float) -> None:
        """Prefetched jobs about to start on a lease not confirmed lately: one heartbeat of
        them says which are still ours (a canceled or reaped one is lost there), then
        they go back to the pool, where a lost one is skipped."""
        batch = list(self._unconfirmed)
        self._leases.heartbeat(conn, now, only=batch)
        for _unused in batch:
            att = self._unconfirmed.popleft()
            assert self._pool is not None
            self._pool.submit(self._run_sync, att)

    def _reap(self, conn: psycopg.Connection[Any], now: float) -> None:
        rows = conn.cursor(row_factory=self._reaped_rows).execute(queries.REAP, [REAP_BATCH]).fetchall()
        self._next_reap = now + self._reap_every
        if rows:
            self._counts.reaped += len(rows)
            log.info(_("worker.reaped", worker=self.name, count=len(rows)))
            if any(r.topic in self._handlers for r in rows):
                self._more = True

    # --- handlers -----------------------------------------------------------------

    def _run_sync(self, att: Attempt) -> None:
        with self._lock:
            if att.phase != QUEUED:
                return  # withdrawn by a graceful stop: handed back to the queue
            now = time.monotonic()
            if not (att.closed or att.job.is_canceled()) and now - att.confirmed > START_CONFIRM \
                    and now < att.expires:
                self._unconfirmed.append(att)  # the loop confirms its lease, then resubmits it
                self._waker.wake()
                return
            self._queued -= 1
            if att.closed or att.job.is_canceled() or now >= att.expires:
                # lease lost, canceled, shutdown, or run out (by our clock) before it
                # started: never run (one whose lease is still ours is handed back)
                att.phase = SKIPPED
            else:
                att.begin(now)
        if att.phase == SKIPPED:
            self._completions.append((att, Outcome("failed")))  # ignored: the attempt is closed
            self._waker.wake()
            return
        t0 = time.perf_counter()
        tracer = tracing.tracer()  # None unless the application set up OpenTelemetry
        if tracer is not None:
            outcome = tracing.attempt(tracer, att.job, att.handler.fn,
                                      lambda exc: self._failed(att, exc))
        else:
            try:
                outcome = of_return(att.handler.fn(att.job))
            except BaseException as exc:  # noqa: BLE001 (a handler never kills the worker)
                outcome = self._failed(att, exc)
        att.elapsed = time.perf_counter() - t0
        self._completions.append((att, outcome))
        self._waker.wake()

    async def _run_async(self, att: Attempt) -> None:
        t0 = time.perf_counter()
        att.task = asyncio.current_task()
        if att.cancel_requested and att.task is not None:
            att.task.cancel()  # told to stop before it started: CancelledError at its first await
        tracer = tracing.tracer()
        if tracer is not None:
            outcome = await tracing.attempt_async(tracer, att.job, att.handler.fn,
                                                  lambda exc: self._failed(att, exc))
        else:
            try:
                result: Awaitable[Any] = att.handler.fn(att.job)
                outcome = of_return(await result)
            except BaseException as exc:  # noqa: BLE001 (a handler never kills the worker)
                outcome = self._failed(att, exc)
        att.elapsed = time.perf_counter() - t0
        self._completions.append((att, outcome))
        self._waker.wake()

    def _failed(self, att: Attempt, exc: BaseException) -> Outcome:
        """The outcome of a handler's exception. An error (not a signal such as Retry) is
        logged at ERROR with its stack: with no logging configured, Python prints it on
        stderr (logging.lastResort), so a failing handler is never silent."""
        outcome = of_exception(exc)
        job = att.job
        if outcome.outcome == "dead":
            # a payload that does not fit, or Dead: the settler logs job.dead at ERROR,
            # with the reason, once the database made it dead (no stack: nothing broke)
            return outcome
        if outcome.outcome == "failed" and not job.is_canceled():
            if find_signal(exc) is not None:
                log.info(_("job.attempt_error", id=job.id, topic=job.topic, attempt=job.attempt,
                           max_attempts=job.max_attempts, error=outcome.error),
                         extra=log_extra(job, "retry"))
            else:
                log.error(_("job.attempt_failed", id=job.id, topic=job.topic, attempt=job.attempt,
                            max_attempts=job.max_attempts, error=outcome.error), exc_info=exc,
                          extra=log_extra(job, "failed"))
        return outcome

    def _drain(self, now: float) -> None:
        """Take the handlers' outcomes into the settler's outbox."""
        if not self._completions:
            return
        while self._completions:
            att, outcome = self._completions.popleft()
            if att not in self._running:
                continue  # a late answer of a handler a previous run left running (_leave_run)
            self._running.discard(att)
            if att.phase != STARTED:  # never run: its lease was lost or ran out before it started
                if not att.closed and att.out_of_time(now):  # its max_execution ran out
                    self._out_of_time(att, now, before=True)
                elif not att.closed:  # ran out by our clock: hand it back if it is still ours
                    att.closed = True
                    self._settler.add(att, Outcome("preserve", None, timedelta(0)))
                continue
            self._counts.topics[att.job.topic].observe(att.elapsed)
            if att.closed:
                if att.hung_reported:
                    log.warning(_("job.hung_returned", id=att.job.id, topic=att.job.topic,
                                  seconds=att.elapsed))
                continue  # timed out or lease lost: its answer is ignored
            att.closed = True
            self._settler.add(att, outcome, att.job.chained if outcome.outcome == "done" else None)
        self._last_done = now
        if self._gather_from is None:
            self._gather_from = now
        self._count_busy()

    def _cancel_attempt(self, att: Attempt, reason: str, now: float) -> None:
        if att.canceled_at is None:
            att.canceled_at = now
        att.job.canceled.set(reason)
        if att.handler.is_async and self._async is not None:
            self._async.call(self._cancel_task, att)

    @staticmethod
    def _cancel_task(att: Attempt) -> None:
        """On the event loop's thread: cancel the attempt's task, or have it cancel itself."""
        att.cancel_requested = True
        if att.task is not None:
            att.task.cancel()

    def _check_attempts(self, now: float) -> None:
        self._next_check = now + CHECK_EVERY
        self._count_busy()  # a sync handler starts on a pool thread: seen here within CHECK_EVERY
        for att in list(self._running):
            if not att.closed and att.out_of_time(now):
                with self._lock:  # a pool thread starts no attempt closed under the lock
                    before = att.phase != STARTED
                    att.closed = True
                self._out_of_time(att, now, before=before)
            if not att.closed and att.deadline is not None and now >= att.deadline:
                att.closed = True
                self._cancel_attempt(att, "timeout", now)
                timeout = att.handler.timeout
                assert timeout is not None
                error = f"timed out after {format_duration(timeout)}"
                log.warning(_("job.attempt_stopped", id=att.job.id, topic=att.job.topic,
                              attempt=att.job.attempt, max_attempts=att.job.max_attempts,
                              error=error))
                self._settler.add(att, Outcome("failed", error))
            if (att.canceled_at is not None and not att.hung_reported and att.phase == STARTED
                    and now - att.canceled_at >= self._hung_grace):
                att.hung_reported = True
                self._counts.topics[att.job.topic].hung += 1
                log.error(_("job.hung", id=att.job.id, topic=att.job.topic,
                            handler=getattr(att.handler.fn, "__qualname__", att.handler.fn),
                            seconds=now - att.canceled_at, reason=att.job.canceled.reason))

    def _undecodable(self, att: Attempt) -> None:
        """A payload Python cannot decode (brooq.payload.Undecodable): the job is dead at once,
        the cause in its last_error; the jobs claimed beside it run."""
        att.closed = True
        payload: Undecodable = att.job.payload
        self._settler.add(att, Outcome("dead", f"payload cannot be decoded: {payload.cause}"))

    def _out_of_time(self, att: Attempt, now: float, *, before: bool) -> None:
        """The job's max_execution ran out: stop its handler (if it runs) and settle the
        attempt failed, naming the cause. Never 'preserve': the next attempt would be out of
        time as well; the database makes the job dead only when its attempts are spent."""
        job = att.job
        att.closed = True  # a queued one is skipped by its thread; a running one's answer ignored
        if not before:
            self._cancel_attempt(att, "max_execution", now)
        limit = self._max_execution.get(job.topic)
        spent = f"max_execution {format_duration(limit)}" if limit is not None else "max_execution"
        deadline = "" if job.execution_deadline is None else f" at {job.execution_deadline.isoformat()}"
        if before:
            error = (f"{spent} exceeded: the job's time since its first claim ran out{deadline}, "
                     "before this attempt started; the handler was not run")
        else:
            error = (f"{spent} exceeded: the job's time since its first claim ran out{deadline}; "
                     "the attempt was stopped")
        log.warning(_("job.attempt_error", id=job.id, topic=job.topic, attempt=job.attempt,
                      max_attempts=job.max_attempts, error=error),
                    extra=log_extra(job, "failed"))
        self._settler.add(att, Outcome("failed", error))

    # --- stop ---------------------------------------------------------------------

    def _begin_stop(self, now: float) -> None:
        self._stopping = True
        grace = self._stop_grace if self._stop_grace is not None else self.config.shutdown_grace
        self._grace_deadline = now + grace.total_seconds()
        self._withdraw()
        log.info(_("worker.stopping", worker=self.name, count=len(self._running),
                   grace=format_duration(grace)))

    def _withdraw(self) -> None:
        """Hand back the prefetched jobs no thread has started: settled 'preserve' with no
        delay, the attempt their claim charged is given back and they are ready again."""
        withdrawn: list[Attempt] = []
        with self._lock:
            for att in self._running:
                if att.phase == QUEUED and not att.handler.is_async:
                    att.phase = SKIPPED
                    withdrawn.append(att)
            self._queued -= len(withdrawn)
        now = time.monotonic()
        for att in withdrawn:
            self._running.discard(att)
            if att.closed:
                continue  # lease already lost: nothing to hand back
            if att.out_of_time(now):  # handed back, it would fail at its next claim anyway
                self._out_of_time(att, now, before=True)
                continue
            att.closed = True
            self._settler.add(att, Outcome("preserve", None, timedelta(0)))
        if withdrawn:
            log.info(_("worker.handing_back", worker=self.name, count=len(withdrawn)))
            self._count_busy()

    def _abort(self, now: float) -> None:
        """Stop now: settle what finished, tell running handlers to stop, renew nothing."""
        if self._settler:
            self._settling.hand(self._settler.take())
        self._settling.wait(self._watchdog.limit)  # a statement's time at most
        if self._settling.in_flight:
            log.warning(_("worker.unsettled_at_exit", worker=self.name, count=self._settling.in_flight,
                          error=self._settling.fatal or "no answer from the database"))
        if self._running:
            log.warning(_("worker.handlers_left_running", worker=self.name, count=len(self._running)))
        for att in list(self._running):
            self._cancel_attempt(att, "shutdown", now)
