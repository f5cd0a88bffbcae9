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
import inspect
import logging
import random
import signal
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from datetime import timedelta
from types import FrameType
from typing import Any, TypeVar

import psycopg
from prometheus_client import Counter
from psycopg.types.json import Jsonb

from brooq import queries
from brooq._version import __version__
from brooq.compat import check_schema
from brooq.config import WorkerConfig, format_duration, parse_address
from brooq.errors import BrooqError, ConfigError, PermissionDenied, translate
from brooq.executors import AsyncRunner, ThreadPool, Waker
from brooq.job import Chained, Job
from brooq.metrics import Metrics, MetricsServer
from brooq.outcome import Outcome, describe, of_exception, of_return
from brooq.payload import to_json
from brooq.producer import declare_topic
from brooq.snapshot import (
    CANCELED,
    CLAIMED,
    DEAD,
    DONE,
    FAILED,
    HUNG,
    LEASE_LOST,
    N_COUNTERS,
    RETRIED,
    TopicSnapshot,
    WorkerSnapshot,
)

log = logging.getLogger("brooq.worker")

Handler = Callable[[Job], Any]
F = TypeVar("F", bound=Callable[..., Any])

CHECK_EVERY = 0.1  # seconds between scans for timeouts and hung handlers
GATHER_GAP = 0.0005  # seconds: a claim waits this long after the last finished handler...
GATHER_MAX = 0.002  # ...and at most this long after the first (see Worker._claim_at)
MAX_SLEEP = 1.0  # the loop turns at least this often (health, stop requests)
RECONNECT_MIN = 0.1
RECONNECT_MAX = 5.0
REAP_BATCH = 1000
FATAL_SQLSTATES = frozenset({"42704", "42501"})  # retrying cannot help: stop the worker
# _Attempt.phase: claimed and waiting for a thread (prefetched), running, never run
QUEUED, STARTED, SKIPPED = 0, 1, 2


@dataclass(frozen=True)
class TopicHandler:
    """A registered handler and the topic settings it declares at start."""

    topic: str
    fn: Handler
    is_async: bool
    timeout: timedelta | None
    max_attempts: int
    backoff_base: timedelta
    backoff_max: timedelta
    retention: timedelta
    max_payload_bytes: int
    notify: bool


class _Attempt:
    """One claimed job from claim to settle (loop thread only, except `elapsed`)."""

    __slots__ = (
        "cancel_requested",
        "canceled_at",
        "closed",
        "deadline",
        "elapsed",
        "handler",
        "hung_reported",
        "job",
        "phase",
        "started",
        "task",
    )

    def __init__(self, job: Job, handler: TopicHandler, started: float | None) -> None:
        self.job = job
        self.handler = handler
        self.phase = QUEUED  # changed under Worker._lock: a pool thread starts it, or the loop withdraws it
        self.started = 0.0
        self.deadline: float | None = None
        if started is not None:
            self.begin(started)
        self.closed = False  # an outcome is queued or the lease is lost: the handler's answer is ignored
        self.canceled_at: float | None = None
        self.hung_reported = False
        self.elapsed = 0.0
        self.task: asyncio.Task[None] | None = None  # async handlers (event loop thread only)
        self.cancel_requested = False  # async handlers (event loop thread only)

    def begin(self, now: float) -> None:
        """The handler starts now: the timeout counts from here."""
        self.phase = STARTED
        self.started = now
        timeout = self.handler.timeout
        self.deadline = None if timeout is None else now + timeout.total_seconds()


class _TopicMetrics:
    """The labelled metric series of one topic, looked up once (labels() takes a lock)."""

    __slots__ = ("claimed", "duration", "hung", "lease_lost", "metrics", "settled", "topic")

    def __init__(self, metrics: Metrics, topic: str) -> None:
        metrics.declare_topic(topic)
        self.metrics = metrics
        self.topic = topic
        self.claimed = metrics.claimed.labels(topic)
        self.duration = metrics.duration.labels(topic)
        self.hung = metrics.hung.labels(topic)
        self.lease_lost = metrics.lease_lost.labels(topic)
        self.settled = {o: metrics.settled.labels(topic, o)
                        for o in ("done", "failed", "delay", "preserve", "cancel", "dead")}

    def settled_as(self, outcome: str) -> Counter:
        child = self.settled.get(outcome)
        if child is None:
            child = self.settled[outcome] = self.metrics.settled.labels(self.topic, outcome)
        return child


class _Pending:
    """An outcome waiting to be settled."""

    __slots__ = ("attempt", "chained", "outcome")

    def __init__(self, attempt: _Attempt, outcome: Outcome, chained: list[Chained]) -> None:
        self.attempt = attempt
        self.outcome = outcome
        self.chained = chained


# Outcomes that need no quoting in an array literal (anything else goes as a list).
_OUTCOME_WORDS = frozenset({"done", "failed", "delay", "preserve", "cancel"})


def _identity(text: Any) -> str:
    return str(text)


class Worker:
    """Runs handlers for jobs of the topics it registers. See docs/python-guide.md.

    Every setting not given here comes from its BROOQ_* environment variable, then
    from the default (see brooq.config): concurrency 10, prefetch = concurrency, lease 30s,
    poll_interval 1s, reap_interval lease/2, shutdown_grace 30s, hung_grace 10s, no metrics
    server. Up to concurrency + prefetch jobs are claimed at once: the prefetched ones wait,
    leased, for a free handler thread (sync handlers only; see docs/python-guide.md).
    """

    def __init__(self, dsn: str | None = None, *, concurrency: int | None = None,
                 prefetch: int | None = None, lease: timedelta | None = None,
                 poll_interval: timedelta | None = None,
                 name: str | None = None, reap_interval: timedelta | None = None,
                 shutdown_grace: timedelta | None = None, hung_grace: timedelta | None = None,
                 metrics_address: str | None = None, stats_interval: timedelta | None = None) -> None:
        config = WorkerConfig.from_env(
            dsn=dsn, concurrency=concurrency, prefetch=prefetch, lease=lease,
            poll_interval=poll_interval, name=name, reap_interval=reap_interval, shutdown_grace=shutdown_grace, hung_grace=hung_grace,
            metrics_address=metrics_address, stats_interval=stats_interval)
        self._setup(config)

    @classmethod
    def from_config(cls, config: WorkerConfig) -> Worker:
        """A worker with exactly these settings (validated; the environment is not read)."""
        config.validate()
        worker = cls.__new__(cls)
        worker._setup(config)
        return worker

    def _setup(self, config: WorkerConfig) -> None:
        self.config = config.with_defaults()
        assert self.config.name is not None
        self.name: str = self.config.name
        self.metrics = Metrics()
        self.metrics.slots.set(self.config.concurrency)
        self._handlers: dict[str, TopicHandler] = {}
        self._counts: dict[str, list[int]] = {}
        self._topic_metrics: dict[str, _TopicMetrics] = {}
        self._lock = threading.Lock()
        self._waker = Waker()
        self._completions: deque[tuple[_Attempt, Outcome]] = deque()
        self._running: set[_Attempt] = set()
        self._held: dict[int, _Attempt] = {}
        self._outbox: list[_Pending] = []
        self._conn: psycopg.Connection[tuple[Any, ...]] | None = None
        self._declared = False
        self._failures = 0
        self._next_connect = 0.0
        self._notified = True
        self._more = True
        self._next_poll = 0.0
        self._gather_from: float | None = None  # when the first handler since the last claim finished
        self._last_done = 0.0
        self._next_heartbeat = 0.0
        self._next_reap = 0.0
        self._next_stats = 0.0
        self._next_check = 0.0
        self._stop_requested = False
        self._abort_requested = False
        self._stop_grace: timedelta | None = None
        self._stopping = False
        self._grace_deadline = 0.0
        self._started = False
        self._started_at = 0.0
        self._last_tick = 0.0
        self._closing = threading.Event()
        self._pool: ThreadPool | None = None
        self._async: AsyncRunner | None = None
        self._listener: threading.Thread | None = None
        self._server: MetricsServer | None = None
        self._fatal: BaseException | None = None
        c = self.config
        self._lease = c.lease
        self._heartbeat_every = c.heartbeat_interval.total_seconds()
        self._reap_every = c.effective_reap_interval.total_seconds()
        self._poll_every = c.poll_interval.total_seconds()
        self._stats_every = c.stats_interval.total_seconds()
        self._hung_grace = c.hung_grace.total_seconds()
        self._concurrency = c.concurrency
        self._prefetch = c.effective_prefetch  # 0 when a handler is async (see _start_services)
        self._capacity = c.concurrency + self._prefetch  # jobs held: running plus prefetched
        self._claim_half = max(1, self._capacity // 2)
        self._queued = 0  # prefetched jobs no thread has started yet (under _lock)
        self._pipeline = psycopg.Pipeline.is_supported()  # libpq >= 14
        self._statement_timeout_ms = max(1000, int(c.lease.total_seconds() * 500))

    # --- registration -------------------------------------------------------------

    def handler(self, topic: str, *, max_attempts: int = 5,
                backoff_base: timedelta = timedelta(seconds=1),
                backoff_max: timedelta = timedelta(minutes=1),
                retention: timedelta = timedelta(days=30), max_payload_bytes: int = 1 << 20,
                notify: bool = True,
                timeout: timedelta | None = timedelta(minutes=1)) -> Callable[[F], F]:
        """Register the decorated function as the handler of ``topic``.

        The topic settings are declared in the database when the worker starts
        (brooq.declare_topic), so producers in any language get the same policy.
        ``timeout`` bounds one attempt (None: no limit): past it the job's
        ``canceled`` is set and the attempt is settled as failed.
        """
        if self._started:
            raise RuntimeError("register handlers before run()")
        if topic in self._handlers:
            raise ValueError(f"topic {topic!r} already has a handler")
        if timeout is not None and timeout <= timedelta(0):
            raise ConfigError([f"handler {topic!r}: timeout must be positive or None"])

        def register(fn: F) -> F:
            self._handlers[topic] = TopicHandler(
                topic, fn, inspect.iscoroutinefunction(fn), timeout, max_attempts, backoff_base,
                backoff_max, retention, max_payload_bytes, notify)
            self._counts[topic] = [0] * N_COUNTERS
            self._topic_metrics[topic] = _TopicMetrics(self.metrics, topic)
            return fn

        return register

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
    def _declare(conn: psycopg.Connection[tuple[Any, ...]], h: TopicHandler) -> None:
        declare_topic(conn, h.topic, max_attempts=h.max_attempts, backoff_base=h.backoff_base,
                      backoff_max=h.backoff_max, retention=h.retention,
                      max_payload_bytes=h.max_payload_bytes, notify=h.notify)

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
        topics = {t: TopicSnapshot.of(list(c)) for t, c in self._counts.items()}
        totals = [sum(c[i] for c in self._counts.values()) for i in range(N_COUNTERS)]
        return WorkerSnapshot(
            name=self.name, claimed=totals[CLAIMED], done=totals[DONE], failed=totals[FAILED],
            retried=totals[RETRIED], dead=totals[DEAD], canceled=totals[CANCELED],
            lease_lost=totals[LEASE_LOST], hung=totals[HUNG], in_flight=len(self._running),
            started_at=self._started_at, connected=self._conn is not None,
            stopping=self._stop_requested, topics=topics)

    @property
    def metrics_url(self) -> str | None:
        """http://host:port of the metrics server while it runs (the real port when 0 was asked)."""
        return None if self._server is None else self._server.url

    def health(self) -> str | None:
        """None when healthy, else why not (what /healthz answers)."""
        if not self._started or self._closing.is_set():
            return "the worker is not running"
        if self._conn is None:
            return "no database connection"
        stale = time.monotonic() - self._last_tick
        if stale > 5.0 + self._statement_timeout_ms / 1000:
            return f"the worker loop has not run for {stale:.0f}s"
        return None

    # --- run ----------------------------------------------------------------------

    def run(self) -> None:
        """Work until stop() or SIGTERM/SIGINT (handled when called in the main thread)."""
        if self._started:
            raise RuntimeError("a worker runs once")
        if not self._handlers:
            raise ConfigError(["no handlers: register one with @worker.handler(topic)"])
        self._started = True
        self._started_at = time.monotonic()
        previous = self._install_signals()
        try:
            self._start_services()
            log.info("worker %s: topics %s, concurrency %d, lease %s", self.name,
                     ", ".join(self._handlers), self._concurrency, format_duration(self._lease))
            self._loop()
        finally:
            self._closing.set()
            self._stop_services()
            self._restore_signals(previous)
        if self._fatal is not None:
            raise self._fatal

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
        if any(not h.is_async for h in self._handlers.values()):
            self._pool = ThreadPool(self._concurrency, f"brooq-{self.name}")
        if any(h.is_async for h in self._handlers.values()):
            self._async = AsyncRunner(f"brooq-async-{self.name}")
            # async handlers start as soon as claimed (no pool queue to wait in): no prefetch
            self._prefetch = 0
            self._capacity = self._concurrency
            self._claim_half = max(1, self._capacity // 2)
        if self.config.metrics_address is not None:
            host, port = parse_address(self.config.metrics_address)
            self._server = MetricsServer(self.metrics, self.health, host, port)
            self._server.start()
            log.info("worker %s: metrics on %s/metrics", self.name, self._server.url)
        self._listener = threading.Thread(target=self._listen, name=f"brooq-listen-{self.name}",
                                          daemon=True)
        self._listener.start()

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
        if self._listener is not None:
            self._listener.join(timeout=2.0)
        self.metrics.busy_slots.set(0)

    # --- the loop -----------------------------------------------------------------

    def _loop(self) -> None:
        while True:
            now = time.monotonic()
            self._last_tick = now
            self._drain(now)
            if self._stop_requested and not self._stopping:
                self._begin_stop(now)
            if self._stopping:
                if self._abort_requested or now >= self._grace_deadline:
                    self._abort(now)
                    return
                if not self._running and not self._outbox:
                    log.info("worker %s: stopped, every job settled", self.name)
                    return
            if self._running and now >= self._next_check:
                self._check_attempts(now)
            if self._conn is None and now >= self._next_connect:
                self._connect(now)
            if self._conn is not None:
                try:
                    self._turn(now)
                except psycopg.Error as exc:
                    if exc.sqlstate in FATAL_SQLSTATES:  # unknown topic, missing rights
                        self._fatal = translate(exc) or exc
                        log.error("worker %s: %s", self.name, self._fatal)
                        return
                    self._lost_connection(exc)
                except Exception as exc:  # a bug of ours must not kill the worker
                    log.exception("worker %s: unexpected error in the loop", self.name)
                    self._lost_connection(exc)
            if self._fatal is not None:
                return
            self._waker.wait(self._sleep_time(time.monotonic()))

    def _turn(self, now: float) -> None:
        claim_at = self._claim_at(now)
        claim_due = claim_at is not None and claim_at <= now
        if self._outbox and claim_due and self._pipeline:
            self._flush_and_claim(now)  # one round trip, one commit
            claim_due = False
        elif self._outbox and (claim_due or claim_at is None or claim_at > now + GATHER_MAX):
            self._flush()  # no claim rides along soon: settle alone
        if self._held and now >= self._next_heartbeat:
            self._heartbeat(now)
        if now >= self._next_reap:
            self._reap(now)
        if self._server is not None and now >= self._next_stats:
            self._refresh_stats(now)
        if claim_due:
            self._claim(now)

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
            if self._outbox and (claim_at is None or claim_at > now + GATHER_MAX):
                return 0.0
            if self._held:
                at = min(at, self._next_heartbeat)
            at = min(at, self._next_reap)
            if self._server is not None:
                at = min(at, self._next_stats)
        return at - now

    def _claim_at(self, now: float) -> float | None:
        """When to claim next (None: no free slot, or stopping).

        At once when jobs are known to be ready (the last claim came back full, a
        notification came) and at least half the slots are free or none is busy;
        otherwise at the poll interval. With fewer slots free, wait while handlers
        keep finishing (each one pushes the claim GATHER_GAP later, GATHER_MAX at
        most after the first): one claim of many jobs costs about what a claim of
        one costs (a round trip and a commit), and the settles ride along."""
        if self._stopping:
            return None
        free = self._capacity - len(self._running)
        if free <= 0:
            return None
        at = now if (self._more or self._notified) else self._next_poll
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
        return kwargs

    def _connect(self, now: float) -> None:
        try:
            conn = psycopg.connect(self.config.dsn, **self._connect_kwargs())
        except psycopg.Error as exc:
            self._lost_connection(exc)
            return
        try:
            conn.execute(f"set statement_timeout = {self._statement_timeout_ms}")
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
        if self._failures:
            log.warning("worker %s: reconnected to the database", self.name)
        self._failures = 0
        now = time.monotonic()
        self._next_heartbeat = now  # leases may have run short while we were away
        self._more = True

    def _declare_topics(self, conn: psycopg.Connection[tuple[Any, ...]]) -> None:
        try:
            schema = check_schema(conn, __version__)
        except BrooqError as exc:  # no schema, an older one, or no right to use it
            self._fatal = exc
            raise
        log.info("worker %s: package %s, schema %s", self.name, __version__, schema)
        for h in self._handlers.values():
            try:
                self._declare(conn, h)
            except PermissionDenied:
                log.warning("worker %s: no right to declare topic %s (brooq_admin); using the "
                            "settings already in the database", self.name, h.topic)
            except BrooqError as exc:
                self._fatal = ConfigError([f"handler {h.topic!r}: {exc}"])
                raise
        self._declared = True

    def _lost_connection(self, exc: BaseException) -> None:
        if self._fatal is not None:
            return
        self._failures += 1
        delay = min(RECONNECT_MAX, RECONNECT_MIN * 2 ** (self._failures - 1)) * random.uniform(0.5, 1.0)
        log.warning("worker %s: database unavailable (%s); retrying in %.1fs", self.name,
                    " ".join(str(exc).split())[:300] or type(exc).__name__, delay)
        if self._conn is not None:
            with contextlib.suppress(Exception):  # closing a broken connection may fail too
                self._conn.close()
            self._conn = None
        self._next_connect = time.monotonic() + delay

    # --- claim and run ------------------------------------------------------------

    def _claim_args(self) -> list[Any]:
        free = self._capacity - len(self._running)
        return [self.name, list(self._handlers), free, self._lease]

    def _claim(self, now: float) -> None:
        assert self._conn is not None
        args = self._claim_args()
        self._notified = False
        self._claimed(now, args[2], self._conn.execute(queries.CLAIM, args).fetchall())

    def _claimed(self, now: float, asked: int, rows: list[tuple[Any, ...]]) -> None:
        self._gather_from = None
        self._more = len(rows) == asked
        if not self._more:
            self._next_poll = now + self._poll_every
        if rows and not self._held:
            self._next_heartbeat = now + self._heartbeat_every
        if not rows:
            return
        started = time.monotonic()
        coros: list[Coroutine[Any, Any, None]] = []
        queued: list[_Attempt] = []  # sync: started by a pool thread when one is free
        for row in rows:
            att = self._start(Job(*row), started)
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
        if len(self._handlers) == 1:
            self._topic_metrics[rows[0][1]].claimed.inc(len(rows))
        else:
            for row in rows:
                self._topic_metrics[row[1]].claimed.inc()
        self.metrics.busy_slots.set(len(self._running) - self._queued)

    def _start(self, job: Job, now: float) -> _Attempt:
        handler = self._handlers[job.topic]
        att = _Attempt(job, handler, None)  # begun when its handler starts
        old = self._held.get(job.id)
        if old is not None:  # reaped and claimed again by us before a heartbeat noticed
            self._lose(old, now)
        self._held[job.id] = att
        self._running.add(att)
        self._counts[job.topic][CLAIMED] += 1
        return att

    def _run_sync(self, att: _Attempt) -> None:
        with self._lock:
            if att.phase != QUEUED:
                return  # withdrawn by a graceful stop: handed back to the queue
            self._queued -= 1
            if att.closed or att.job.canceled.is_set():
                att.phase = SKIPPED  # lease lost (or shutdown) before it started: never run
            else:
                att.begin(time.monotonic())
        if att.phase == SKIPPED:
            self._completions.append((att, Outcome("failed")))  # ignored: the attempt is closed
            self._waker.wake()
            return
        t0 = time.perf_counter()
        try:
            outcome = of_return(att.handler.fn(att.job))
        except BaseException as exc:  # noqa: BLE001 (a handler never kills the worker)
            outcome = self._failed(att, exc)
        att.elapsed = time.perf_counter() - t0
        self._completions.append((att, outcome))
        self._waker.wake()

    async def _run_async(self, att: _Attempt) -> None:
        t0 = time.perf_counter()
        att.task = asyncio.current_task()
        if att.cancel_requested and att.task is not None:
            att.task.cancel()  # told to stop before it started: CancelledError at its first await
        try:
            result: Awaitable[Any] = att.handler.fn(att.job)
            outcome = of_return(await result)
        except BaseException as exc:  # noqa: BLE001 (a handler never kills the worker)
            outcome = self._failed(att, exc)
        att.elapsed = time.perf_counter() - t0
        self._completions.append((att, outcome))
        self._waker.wake()

    def _failed(self, att: _Attempt, exc: BaseException) -> Outcome:
        outcome = of_exception(exc)
        if outcome.outcome == "failed" and not att.job.canceled.is_set():
            log.info("job %d (%s) attempt %d/%d failed: %s", att.job.id, att.job.topic,
                     att.job.attempt, att.job.max_attempts, outcome.error, exc_info=exc)
        return outcome

    def _drain(self, now: float) -> None:
        if not self._completions:
            return
        while self._completions:
            att, outcome = self._completions.popleft()
            self._running.discard(att)
            if att.phase != STARTED:
                continue  # never run (its lease was lost before a thread took it)
            self._topic_metrics[att.job.topic].duration.observe(att.elapsed)
            if att.closed:
                if att.hung_reported:
                    log.warning("job %d (%s): the hung handler returned after %.1fs", att.job.id,
                                att.job.topic, att.elapsed)
                continue  # timed out or lease lost: its answer is ignored
            att.closed = True
            chained = att.job.chained if outcome.outcome == "done" else []
            self._outbox.append(_Pending(att, outcome, chained))
        self._last_done = now
        if self._gather_from is None:
            self._gather_from = now
        self.metrics.busy_slots.set(len(self._running) - self._queued)

    def _cancel_attempt(self, att: _Attempt, reason: str, now: float) -> None:
        if att.canceled_at is None:
            att.canceled_at = now
        att.job.canceled.set(reason)
        if att.handler.is_async and self._async is not None:
            self._async.call(self._cancel_task, att)

    @staticmethod
    def _cancel_task(att: _Attempt) -> None:
        """On the event loop's thread: cancel the attempt's task, or have it cancel itself."""
        att.cancel_requested = True
        if att.task is not None:
            att.task.cancel()

    def _check_attempts(self, now: float) -> None:
        self._next_check = now + CHECK_EVERY
        for att in list(self._running):
            if not att.closed and att.deadline is not None and now >= att.deadline:
                att.closed = True
                self._cancel_attempt(att, "timeout", now)
                timeout = att.handler.timeout
                assert timeout is not None
                error = f"timed out after {format_duration(timeout)}"
                log.warning("job %d (%s) attempt %d/%d %s", att.job.id, att.job.topic,
                            att.job.attempt, att.job.max_attempts, error)
                self._outbox.append(_Pending(att, Outcome("failed", error), []))
            if (att.canceled_at is not None and not att.hung_reported and att.phase == STARTED
                    and now - att.canceled_at >= self._hung_grace):
                att.hung_reported = True
                self._counts[att.job.topic][HUNG] += 1
                self._topic_metrics[att.job.topic].hung.inc()
                log.error("job %d (%s): handler %s still running %.1fs after it was told to stop "
                          "(%s); it holds a slot until it returns", att.job.id, att.job.topic,
                          getattr(att.handler.fn, "__qualname__", att.handler.fn),
                          now - att.canceled_at, att.job.canceled.reason)

    # --- settle -------------------------------------------------------------------

    def _flush(self) -> None:
        conn = self._conn
        assert conn is not None
        plain = [p for p in self._outbox if not p.chained]
        if plain:
            try:
                rows = conn.execute(queries.SETTLE_MANY, self._settle_many_args(plain)).fetchall()
            except psycopg.OperationalError:
                raise
            except psycopg.Error as exc:  # a value the database refused: settle one by one
                log.warning("worker %s: settle_many failed (%s); settling one by one", self.name, exc)
                rows = [(p.attempt.job.id, self._settle_one(conn, p)) for p in plain]
            self._settled(plain, dict(rows))
            self._outbox = [p for p in self._outbox if p.chained]
        self._flush_chained(conn)

    def _flush_chained(self, conn: psycopg.Connection[tuple[Any, ...]]) -> None:
        while self._outbox:
            p = self._outbox[0]
            state = self._settle_chained(conn, p)
            self._settled([p], {p.attempt.job.id: state})
            self._outbox.pop(0)

    def _flush_and_claim(self, now: float) -> None:
        """settle_many and claim in one pipeline: one round trip, one implicit transaction."""
        conn = self._conn
        assert conn is not None
        plain = [p for p in self._outbox if not p.chained]
        if not plain:
            self._flush()
            self._claim(now)
            return
        args = self._claim_args()
        self._notified = False
        try:
            with conn.pipeline():
                settling = conn.execute(queries.SETTLE_MANY, self._settle_many_args(plain))
                claiming = conn.execute(queries.CLAIM, args)
            settled = settling.fetchall()
            claimed = claiming.fetchall()
        except psycopg.OperationalError:
            raise
        except psycopg.Error as exc:
            if exc.sqlstate in FATAL_SQLSTATES:
                raise
            # a value the database refused rolled both back: do them one at a time
            self._flush()
            self._claim(now)
            return
        self._settled(plain, dict(settled))
        self._outbox = [p for p in self._outbox if p.chained]
        self._claimed(now, args[2], claimed)
        self._flush_chained(conn)

    def _settle_many_args(self, batch: list[_Pending]) -> list[Any]:
        # ids, lease tokens (ints) and outcomes (a fixed set of words) go as array
        # literals: psycopg's list dumper costs ~1 us per element, a join ~0.1 us.
        ids = "{" + ",".join([str(p.attempt.job.id) for p in batch]) + "}"
        tokens = "{" + ",".join([str(p.attempt.job.lease_token) for p in batch]) + "}"
        words = [p.outcome.outcome for p in batch]
        outcomes: str | list[str] = (
            "{" + ",".join(words) + "}" if _OUTCOME_WORDS.issuperset(words) else words)
        errors = [p.outcome.error for p in batch]
        delays = [p.outcome.delay for p in batch]
        results = [p.outcome.result for p in batch]
        return [self.name, ids, tokens, outcomes,
                errors if any(e is not None for e in errors) else None,
                delays if any(d is not None for d in delays) else None,
                results if any(r is not None for r in results) else None]

    def _settle_args(self, p: _Pending) -> list[Any]:
        o = p.outcome
        return [p.attempt.job.id, self.name, p.attempt.job.lease_token, o.outcome, o.error,
                o.delay, o.result]

    def _settle_one(self, conn: psycopg.Connection[tuple[Any, ...]], p: _Pending) -> str | None:
        try:
            row = conn.execute(queries.SETTLE, self._settle_args(p)).fetchone()
        except psycopg.OperationalError:
            raise
        except psycopg.Error as exc:
            if p.outcome.outcome == "failed" and p.outcome.delay is None and p.outcome.result is None:
                log.error("job %d: cannot settle it as failed: %s", p.attempt.job.id, exc)
                return None  # the lease expires, reap returns the job
            # a value the database refuses (a result jsonb cannot hold, a delay out of
            # range): the attempt fails, with the reason
            log.warning("job %d: cannot settle %s (%s); settling failed", p.attempt.job.id,
                        p.outcome.outcome, exc)
            p.outcome = Outcome("failed", describe(exc, f"cannot settle {p.outcome.outcome}: "))
            row = conn.execute(queries.SETTLE, self._settle_args(p)).fetchone()
        return None if row is None or row[0] is None else str(row[0])

    def _settle_chained(self, conn: psycopg.Connection[tuple[Any, ...]], p: _Pending) -> str | None:
        """done and the chained jobs in one transaction; none of them when the lease is lost."""
        state: str | None = None
        try:
            with conn.transaction():
                row = conn.execute(queries.SETTLE, self._settle_args(p)).fetchone()
                state = None if row is None or row[0] is None else str(row[0])
                if state is None:
                    raise psycopg.Rollback()
                for c in p.chained:
                    conn.execute(queries.ENQUEUE, [c.topic, Jsonb(to_json(c.payload), dumps=_identity),
                                                   c.key, None, c.priority, c.delay])
        except psycopg.OperationalError:
            raise
        except psycopg.Error as exc:
            error = translate(exc) or exc
            log.warning("job %d: chained jobs refused (%s); the attempt fails", p.attempt.job.id, error)
            p.outcome = Outcome("failed", describe(error, "chain: "))
            p.chained = []
            return self._settle_one(conn, p)
        return state

    def _settled(self, batch: list[_Pending], states: dict[int, str | None]) -> None:
        done: dict[str, int] = {}  # the common outcome, counted once per topic
        for p in batch:
            att = p.attempt
            job = att.job
            if self._held.get(job.id) is att:
                del self._held[job.id]
            state = states.get(job.id)
            counts = self._counts[job.topic]
            if state is None:
                counts[LEASE_LOST] += 1
                self._topic_metrics[job.topic].lease_lost.inc()
                continue
            outcome = p.outcome.outcome
            if state == "done":
                counts[DONE] += 1
                done[job.topic] = done.get(job.topic, 0) + 1
                continue
            if state == "dead":
                counts[DEAD] += 1
                outcome = "dead"
            elif state == "canceled":
                counts[CANCELED] += 1
            elif outcome == "failed":
                counts[FAILED] += 1
            else:
                counts[RETRIED] += 1
            self._topic_metrics[job.topic].settled_as(outcome).inc()
        for topic, n in done.items():
            self._topic_metrics[topic].settled_as("done").inc(n)

    # --- leases -------------------------------------------------------------------

    def _heartbeat(self, now: float) -> None:
        assert self._conn is not None
        ids = list(self._held)
        tokens = [self._held[i].job.lease_token for i in ids]
        rows = self._conn.execute(queries.HEARTBEAT, [self.name, ids, self._lease, tokens]).fetchall()
        self._next_heartbeat = now + self._heartbeat_every
        kept = {r[0] for r in rows}
        for job_id in ids:
            if job_id not in kept:
                att = self._held.get(job_id)
                if att is not None:
                    self._lose(att, now)

    def _lose(self, att: _Attempt, now: float) -> None:
        """The lease is gone (canceled, reaped): stop the handler, write nothing for it."""
        job = att.job
        if self._held.get(job.id) is att:
            del self._held[job.id]
        self._outbox = [p for p in self._outbox if p.attempt is not att]
        att.closed = True
        self._counts[job.topic][LEASE_LOST] += 1
        self._topic_metrics[job.topic].lease_lost.inc()
        if att in self._running:
            log.info("job %d (%s): lease lost (canceled or reaped); stopping its handler", job.id,
                     job.topic)
            self._cancel_attempt(att, "lease lost", now)

    def _reap(self, now: float) -> None:
        assert self._conn is not None
        rows = self._conn.execute(queries.REAP, [REAP_BATCH]).fetchall()
        self._next_reap = now + self._reap_every
        if rows:
            self.metrics.reaped.inc(len(rows))
            log.info("worker %s: reaped %d jobs whose lease expired", self.name, len(rows))
            if any(r[1] in self._handlers for r in rows):
                self._more = True

    def _refresh_stats(self, now: float) -> None:
        assert self._conn is not None
        self._next_stats = now + self._stats_every
        rows = self._conn.execute(queries.TOPIC_STATS + " where topic = any(%s::text[])",
                                  [list(self._handlers)]).fetchall()
        for r in rows:
            topic = r[0]
            self.metrics.jobs.labels(topic, "pending").set(r[2])
            self.metrics.jobs.labels(topic, "failed").set(r[3])
            self.metrics.jobs.labels(topic, "processing").set(r[6])
            self.metrics.oldest_ready_age.labels(topic).set(r[8] or 0.0)

    # --- stop ---------------------------------------------------------------------

    def _begin_stop(self, now: float) -> None:
        self._stopping = True
        grace = self._stop_grace if self._stop_grace is not None else self.config.shutdown_grace
        self._grace_deadline = now + grace.total_seconds()
        self._withdraw()
        log.info("worker %s: stopping; %d jobs in flight, waiting up to %s", self.name,
                 len(self._running), format_duration(grace))

    def _withdraw(self) -> None:
        """Hand back the prefetched jobs no thread has started: settled 'preserve' with no
        delay, the attempt their claim charged is given back and they are ready again."""
        withdrawn: list[_Attempt] = []
        with self._lock:
            for att in self._running:
                if att.phase == QUEUED and not att.handler.is_async:
                    att.phase = SKIPPED
                    withdrawn.append(att)
            self._queued -= len(withdrawn)
        for att in withdrawn:
            self._running.discard(att)
            if att.closed:
                continue  # lease already lost: nothing to hand back
            att.closed = True
            self._outbox.append(_Pending(att, Outcome("preserve", None, timedelta(0)), []))
        if withdrawn:
            log.info("worker %s: handing back %d prefetched jobs that never started", self.name,
                     len(withdrawn))
            self.metrics.busy_slots.set(len(self._running) - self._queued)

    def _abort(self, now: float) -> None:
        """Stop now: settle what finished, tell running handlers to stop, renew nothing."""
        if self._outbox and self._conn is not None:
            try:
                self._flush()
            except psycopg.Error as exc:
                log.warning("worker %s: could not settle %d finished jobs before exit: %s",
                            self.name, len(self._outbox), exc)
        if self._running:
            log.warning("worker %s: stopping with %d handlers still running; their leases will "
                        "expire and the jobs return to the queue", self.name, len(self._running))
        for att in list(self._running):
            self._cancel_attempt(att, "shutdown", now)

    # --- listener -----------------------------------------------------------------

    def _listen(self) -> None:
        failures = 0
        topics = set(self._handlers)
        while not self._closing.is_set():
            try:
                with psycopg.connect(self.config.dsn, **self._connect_kwargs()) as conn:
                    conn.execute(queries.LISTEN)
                    failures = 0
                    self._notified = True  # a notification may have been missed meanwhile
                    self._waker.wake()
                    while not self._closing.is_set():
                        for note in conn.notifies(timeout=0.5):
                            if note.payload in topics:
                                self._notified = True
                                self._waker.wake()
            except psycopg.Error as exc:
                failures += 1
                delay = min(RECONNECT_MAX, RECONNECT_MIN * 2 ** (failures - 1))
                log.debug("worker %s: listener connection lost (%s); retrying in %.1fs",
                          self.name, exc, delay)
                self._closing.wait(delay)
