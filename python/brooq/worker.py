"""The brooq worker: one loop that claims, runs handlers, settles and renews leases.

It decides nothing about a job's fate: brooq.claim, brooq.settle_many, brooq.settle,
brooq.heartbeat and brooq.reap do. Threads:

- the loop (the thread that calls run()): owns one autocommit connection and is
  the only one to use it. Each turn it settles finished attempts in one
  settle_many, renews leases every lease/3, reaps every reap_interval, ticks the
  periodic jobs the workers tick each second (brooq.ticker), and claims
  as many jobs as it has free slots plus `prefetch`: claimed jobs wait, leased, in the
  pool's queue, so a free thread starts the next one while the loop's round trip runs.
  No transaction stays open while a handler runs.
- the listener: its own connection, LISTEN brooq; wakes the loop when a job of one
  of our topics is enqueued (polling every poll_interval is the fallback).
- handlers: sync ones in a pool of `concurrency` daemon threads, async ones on an
  asyncio loop in its own thread (brooq.runner). They only hand their outcome back to
  the loop.
- the metrics HTTP server, when metrics_address is set.

A lost connection is never a job failure: the loop reconnects with exponential
backoff, handlers keep running, and their outcomes are settled once the
connection is back (the lease token makes a late settle safe: if the lease was
lost meanwhile, nothing is written).
"""

from __future__ import annotations

import dataclasses
import gc
import inspect
import logging
import re
import threading
import time
from collections.abc import Callable, Mapping
from datetime import timedelta
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeVar

import psycopg

from brooq import queries, tasks
from brooq.attempt import TopicHandler
from brooq.config import WorkerConfig, format_duration, parse_address
from brooq.counters import Counters
from brooq.declared import takes_settings
from brooq.durable import StepStore
from brooq.errors import (
    FATAL_SQLSTATES,
    WORKER,
    BrooqError,
    ConfigError,
    translate,
    who,
)
from brooq.executors import Waker
from brooq.job import Job
from brooq.leases import Leases
from brooq.lifecycle import announce, refuse_run_at_import, stop_signals
from brooq.listener import Listener
from brooq.messages import _, _n
from brooq.nometrics import NoMetrics
from brooq.redact import shown_dsn
from brooq.rows import Reaped, fields_row
from brooq.runner import CHECK_EVERY, Runner
from brooq.scheduling import ClaimSchedule
from brooq.session import DSN_FROM, Session, declare
from brooq.settings import HandlerSettings, topic_settings
from brooq.settler import Settler, SettleThread
from brooq.snapshot import TopicSnapshot, WorkerSnapshot
from brooq.ticker import Ticker
from brooq.typed import with_payload
from brooq.watchdog import Watchdog

if TYPE_CHECKING:
    from brooq.metrics import Metrics, MetricsServer

log = logging.getLogger("brooq.worker")

F = TypeVar("F", bound=Callable[..., Any])

MAX_SLEEP = 1.0  # the loop turns at least this often (health, stop requests)
REAP_BATCH = 1000


def _metrics(counts: Counters) -> Metrics | NoMetrics:
    """Prometheus metrics when prometheus-client is installed (the extra metrics, brooq.extras)."""
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

    The worker's parts: this loop claims when its ClaimSchedule (brooq.scheduling) says
    when, how many and from which topics, and keeps the other timers; a Session (brooq.session)
    connects, checks the schema and declares the topics, a Runner (brooq.runner) runs
    the claimed jobs' handlers and stops them, a Settler (brooq.settler) writes outcomes,
    Leases (brooq.leases) renew and lose leases, a Listener (brooq.listener) wakes the
    loop on NOTIFY, a Ticker (brooq.ticker) ticks the periodic jobs the workers tick.
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
        self._lock = threading.Lock()  # one run() at a time
        self._waker = Waker()
        self._started = False  # run() was called: no more handlers
        self._active = False  # run() is running now
        self._reap_every = c.effective_reap_interval.total_seconds()
        self._poll_every = c.poll_interval.total_seconds()
        self._stats_every = c.stats_interval.total_seconds()
        self._concurrency = c.concurrency
        # a turn with no answer for longer than a statement may take: a silent connection
        self._watchdog = Watchdog(self.name, c.statement_timeout_ms / 1000 + 1.0)
        self._settle_watchdog = Watchdog(self.name, self._watchdog.limit)  # the settling connection's
        self.dsn_from = DSN_FROM  # where the DSN came from: the hint of a failure to connect names it
        self._new_run()

    def _new_run(self) -> None:
        """The state of one run, fresh: at setup, and after each run so that a stopped
        worker can run() again (its counters and metrics go on)."""
        c = self.config
        self._session = Session(self.name, c, self._handlers)
        self._leases = Leases(self.name, c.lease, self._counts,
                              on_lost=lambda att, now: self._runner.lost(att, now))
        self._outbox = Settler(self.name, self._counts, release=self._leases.release)
        self._settle_thread = SettleThread(self._outbox, self._session.open, self._waker.wake,
                                           lambda conn: self._settle_watchdog.guard(conn))
        self._runner = Runner(self.name, self._handlers, self._counts, self._leases, self._outbox,
                              self._waker.wake, c.hung_grace)
        self._listener = Listener(self.name, (), self._waker.wake)
        self._ticker = Ticker(self.name)  # the schedules the workers tick (brooq.ticker)
        self._steps = StepStore(self.name, self._session.open)  # handlers' durable steps (brooq.durable)
        self._job_rows = fields_row(Job)
        self._reaped_rows = fields_row(Reaped)
        # when to claim, how many, from which topics; the capacity is the jobs held,
        # running plus prefetched (no prefetch when a handler is async: _start_services)
        self._schedule = ClaimSchedule(c.concurrency + c.effective_prefetch, self._poll_every)
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
        self._listen_thread: threading.Thread | None = None
        self._server: MetricsServer | None = None
        self._fatal: BaseException | None = None

    def _leave_run(self) -> None:
        """After a run: the runner closes what is left (handed back, or left to its lease
        when the database did not answer), then the state is fresh."""
        self._runner.leave()
        self._new_run()

    # --- registration -------------------------------------------------------------

    @takes_settings(HandlerSettings)
    def handler(self, topic: str, settings: HandlerSettings) -> Callable[[F], F]:
        """Register the decorated function as the handler of ``topic``.

        The keyword arguments are the topic's settings (brooq.TopicSettings says what
        each means) and ``timeout``. The worker declares the topic with them when it
        starts (brooq.declare_topic), so producers in any language get the same policy:
        give every worker of a topic the same ones.
        ``timeout`` bounds one attempt (None: no limit): past it the job's ``canceled``
        is set and the attempt is settled as failed. This worker's lease must fit in
        ``max_lease``, and at start it refuses a ``timeout`` longer than the topic's
        ``max_execution`` as the database holds it.
        """
        if self._started:
            raise RuntimeError("register handlers before run()")
        if topic in self._handlers:
            raise ValueError(f"topic {topic!r} already has a handler")
        timeout, max_execution, max_lease = settings.timeout, settings.max_execution, settings.max_lease
        if timeout is not None and timeout <= timedelta(0):
            raise ConfigError([f"handler {topic!r}: timeout must be positive or None"])
        if max_execution is not None and max_execution <= timedelta(0):
            raise ConfigError([f"handler {topic!r}: max_execution must be positive or None"])
        # lease <= max_lease: the database is the source of truth. brooq.claim refuses a
        # lease longer than the max_lease of the topics claimed from (22023), whoever
        # declared them, and brooq.heartbeat cuts a renewal to it: that error is the
        # contract. This pre-check only fails fast, at registration rather than at the
        # first claim, and it derives from the same declaration: the max_lease compared
        # is the value this worker declares for the topic at start (TopicSettings'
        # default, or the one given here). A worker that may not declare topics (no
        # brooq_admin) keeps the admin's max_lease, which the claim holds it to; there
        # this check still reads the handler's: give the handler the topic's max_lease.
        if self.config.lease > max_lease:
            raise ConfigError([(f"handler {topic!r}: the worker's lease {format_duration(self.config.lease)} "
                                f"is longer than the topic's max_lease {format_duration(max_lease)}")])

        def register(fn: F) -> F:
            self._handlers[topic] = TopicHandler(
                topic, with_payload(fn), inspect.iscoroutinefunction(fn), timeout, topic_settings(settings))
            self._add_topic(topic)
            return fn

        return register

    register = tasks.register  # worker.register(task, registry, ...): brooq.tasks

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

    @property
    def handlers(self) -> Mapping[str, TopicHandler]:
        """The registered handlers by topic, each with its topic settings and timeout
        (read only: register with @worker.handler or worker.register)."""
        return MappingProxyType(self._handlers)

    def declare_topics(self) -> None:
        """Declare the registered topics now (run() does it at start), e.g. at deploy time,
        so producers can enqueue before the first worker runs. Needs brooq_admin."""
        with psycopg.connect(self.config.dsn, autocommit=True) as conn:
            for h in self._handlers.values():
                declare(conn, h)

    # --- control from other threads -----------------------------------------------

    def stop(self, grace: timedelta | None = None) -> None:
        """Stop gracefully: claim no more, let running handlers finish within ``grace``
        (default: shutdown_grace), then hand the jobs of those still running back to the
        queue (ready at once, the attempt given back). Safe from any thread; a second
        call stops at once."""
        if self._stop_requested:
            self._abort_requested = True
        self._stop_grace = grace
        self._stop_requested = True
        self._waker.wake()

    def snapshot(self) -> WorkerSnapshot:
        """The worker's counters now (cheap; for progress displays)."""
        runner = self._runner
        queued = runner.queued  # claimed, not started: not "in flight" (handlers running now)
        topics = {t: c.snapshot() for t, c in list(self._counts.topics.items())}
        totals = {f.name: sum(getattr(t, f.name) for t in topics.values())
                  for f in dataclasses.fields(TopicSnapshot)}
        return WorkerSnapshot(
            name=self.name, **totals, in_flight=len(runner) - queued, prefetched=queued,
            started_at=self._started_at,
            connected=self._session.conn is not None, stopping=self._stop_requested, topics=topics)

    @property
    def metrics_url(self) -> str | None:
        """http://host:port of the metrics server while it runs (the real port when 0 was asked)."""
        return None if self._server is None else self._server.url

    def health(self) -> str | None:
        """None when healthy, else why not (what /healthz answers)."""
        if not self._active or self._closing.is_set():
            return "the worker is not running"
        if self._session.conn is None:
            return "no database connection"
        stale = time.monotonic() - self._last_tick
        if stale > 5.0 + self.config.statement_timeout_ms / 1000:
            return f"the worker loop has not run for {stale:.0f}s"
        return None

    # --- run ----------------------------------------------------------------------

    def run(self) -> None:
        """Work until stop() or SIGTERM/SIGINT (handled when called in the main thread).

        A worker can run() again once a run has returned (one run at a time); its
        counters and metrics go on. A stop() between two runs stops the next one."""
        refuse_run_at_import()
        with self._lock:
            if self._active:
                raise RuntimeError("this worker is running already: one run() at a time")
            if not self._handlers:
                raise ConfigError(["no handlers: register one with @worker.handler(topic)"])
            self._active = self._started = True
        self._started_at = time.monotonic()
        fatal: BaseException | None = None
        try:
            with stop_signals(self._on_signal):
                # Every object made before the run (modules, the app, their data) leaves the
                # cyclic GC's reach, so that a full collection walks only what the run
                # makes: its pauses, which hold the GIL, stay around a millisecond in a
                # long drain (bench/results/history.md, "The worker's garbage collector").
                # Given back when it ends.
                gc.freeze()
                try:
                    self._start_services()
                    announce(log, _("worker.started", worker=self.name, topics=", ".join(self._handlers),
                                     concurrency=self._concurrency,
                                     lease=format_duration(self.config.lease),
                                     database=shown_dsn(self.config.dsn)))
                    self._loop()
                finally:
                    self._closing.set()
                    self._stop_services()
                    gc.unfreeze()
                    fatal = self._fatal
        finally:
            self._leave_run()  # run() may be called again (after a stop, or a fatal error)
            self._active = False
        if fatal is not None:  # a configuration problem: retrying cannot help
            raise fatal.with_traceback(None)  # its line, not the loop's frames

    def _on_signal(self) -> None:
        # SIGTERM or SIGINT (lifecycle.stop_signals): set flags, write a pipe, nothing else.
        if self._stop_requested:
            self._abort_requested = True
        self._stop_requested = True
        self._waker.wake()

    def _start_services(self) -> None:
        self._settle_thread.start(self.name)
        self._runner.open(self._concurrency)
        if any(h.is_async for h in self._handlers.values()):
            # async handlers start as soon as claimed (no pool queue to wait in): no prefetch
            self._schedule.capacity = self._concurrency
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
        self._listen_thread = threading.Thread(
            target=self._listener.run, args=(listen_dsn, self._session.connect_kwargs(), self._closing),
            name=f"brooq-listen-{self.name}", daemon=True)
        self._listen_thread.start()

    def _stop_services(self) -> None:
        self._runner.close(time.monotonic())
        self._session.close()
        if self._server is not None:
            self._server.stop()
        if self._listen_thread is not None:
            self._listen_thread.join(timeout=2.0)
        self._settle_thread.stop()
        self._steps.close()
        self._watchdog.stop()
        self._settle_watchdog.stop()

    # --- the loop -----------------------------------------------------------------

    def _loop(self) -> None:
        while True:
            now = time.monotonic()
            self._last_tick = now
            if self._runner.collect(now):  # handlers finished: their outcomes are in the outbox
                self._schedule.finished(now)
            self._schedule.settled(self._settle_thread.collect())  # may make jobs ready
            if self._settle_thread.fatal is not None:  # the settling connection lacks a right
                self._fatal = self._settle_thread.fatal
                log.error(_("worker.fatal", worker=self.name, error=self._fatal))
                return
            if self._stop_requested and not self._stopping:
                self._begin_stop(now)
            if self._stopping:
                if self._abort_requested or now >= self._grace_deadline:
                    self._abort(now)
                    return
                if not self._runner and not self._outbox and not self._settle_thread.in_flight:
                    announce(log, _("worker.stopped", worker=self.name))
                    return
            if self._runner and now >= self._next_check:
                self._next_check = now + CHECK_EVERY
                self._runner.check(now)
            if self._session.conn is None and now >= self._session.next_connect:
                self._connect()
            if (conn := self._session.conn) is not None:
                try:
                    with self._watchdog.guard(conn):
                        self._turn(conn, now)
                except psycopg.Error as exc:
                    if exc.sqlstate in FATAL_SQLSTATES:  # unknown topic, missing rights
                        self._fatal = translate(exc, WORKER, who(conn)) or exc
                        log.error(_("worker.fatal", worker=self.name, error=self._fatal))
                        return
                    self._lost_connection(exc)
                except Exception as exc:  # a bug of ours must not kill the worker
                    log.exception(_("worker.loop_error", worker=self.name))
                    self._lost_connection(exc)
            if self._fatal is not None:
                return
            if self._outbox:  # written on the settling thread's connection (SettleThread)
                self._settle_thread.hand(self._outbox.take())
            self._waker.wait(self._sleep_time(time.monotonic()))

    def _turn(self, conn: psycopg.Connection[Any], now: float) -> None:
        claim_at = self._claim_at(now)
        if claim_at is not None and claim_at <= now:
            self._claim(conn, now)  # first: the jobs start while the rest of the turn runs
        if self._leases.due(now):
            self._leases.heartbeat(conn, now)
        if self._runner.unconfirmed:
            self._runner.confirm_prefetched(conn, now)
        if now >= self._next_reap:
            self._reap(conn, now)
        if self._ticker.due(now) and not self._stopping:
            self._ticker.tick(conn, now)
        if self._server is not None and now >= self._next_stats:
            self._next_stats = now + self._stats_every
            self.metrics.refresh_stats(conn, list(self._handlers))

    def _sleep_time(self, now: float) -> float:
        at = now + MAX_SLEEP
        if self._stopping:
            at = min(at, self._grace_deadline)
        if self._runner:
            at = min(at, self._next_check)
        if self._session.conn is None:
            at = min(at, self._session.next_connect)
        else:
            claim_at = self._claim_at(now)
            if claim_at is not None:
                at = min(at, claim_at)
            if self._leases:
                at = min(at, self._leases.next_heartbeat)
            at = min(at, self._next_reap)
            if not self._stopping:
                at = min(at, self._ticker.next_tick)
            if self._server is not None:
                at = min(at, self._next_stats)
        return at - now

    def _claim_at(self, now: float) -> float | None:
        """When to claim next (None: no free slot, or stopping): see brooq.scheduling."""
        if self._stopping:
            return None
        return self._schedule.claim_at(now, self._free(), bool(self._runner), self._listener.claim_at(now))

    # --- connection ---------------------------------------------------------------

    def _connect(self) -> None:
        self._session.dsn_from = self.dsn_from
        try:
            self._session.connect()
        except BrooqError as exc:  # a DSN that never connected, the schema, a topic setting, a right
            self._fatal = exc  # retrying cannot help: run() raises it
            return
        except psycopg.Error as exc:
            self._lost_connection(exc)
            return
        self._runner.max_execution = self._session.max_execution
        self._leases.renew_soon(time.monotonic())  # leases may have run short while we were away
        self._schedule.ready()

    def _lost_connection(self, exc: BaseException) -> None:
        if self._fatal is not None:
            return
        self._session.lost(exc)
        self._settle_thread.renew()

    # --- claim --------------------------------------------------------------------

    def _free(self) -> int:
        """Slots to claim for (ClaimSchedule.free): the jobs held, and the outcomes not yet
        written, the outbox's and the settling thread's."""
        return self._schedule.free(len(self._runner), len(self._outbox) + self._settle_thread.in_flight)

    def _claim(self, conn: psycopg.Connection[Any], now: float) -> None:
        ask = self._schedule.ask(now, self._free(), self._listener.take())
        topics = self._schedule.topics(self._handlers)
        args = [self.name, topics, ask.count, self.config.lease]
        try:
            jobs = conn.cursor(row_factory=self._job_rows).execute(queries.CLAIM, args).fetchall()
        except psycopg.errors.UndefinedObject as exc:
            if not self._stop_serving(exc, topics):
                raise  # the worker's last topic: fatal (an unknown topic, FATAL_SQLSTATES)
            return  # the schedule claims from the others at once
        busy = bool(self._runner or self._outbox or self._settle_thread.in_flight)
        self._schedule.claimed(now, ask, len(jobs), busy)
        self._listener.claimed(now, bool(jobs), ask.only_notified)
        if jobs:
            for job in jobs:
                job._store = self._steps
            self._runner.start(jobs, now)

    def _stop_serving(self, exc: psycopg.Error, topics: list[str]) -> bool:
        """A claim met a topic that no longer exists (dropped while the worker ran): stop
        claiming from it, say so once at WARNING, and keep serving the others. False when
        it is not one of ours, or the last: then the error stands (fatal)."""
        found = re.match(r'cannot claim from topic "(.*)": it does not exist', exc.diag.message_primary or "")
        if found is None or found.group(1) not in topics or len(topics) < 2:
            return False
        self._schedule.drop(found.group(1))
        log.warning(_("worker.topic_dropped", worker=self.name, topic=found.group(1),
                      topics=", ".join(t for t in topics if t != found.group(1))))
        return True

    def _reap(self, conn: psycopg.Connection[Any], now: float) -> None:
        rows = conn.cursor(row_factory=self._reaped_rows).execute(queries.REAP, [REAP_BATCH]).fetchall()
        self._next_reap = now + self._reap_every
        if rows:
            self._counts.reaped += len(rows)
            log.info(_n("worker.reaped", len(rows), worker=self.name))
            if any(r.topic in self._handlers for r in rows):
                self._schedule.ready()

    # --- stop ---------------------------------------------------------------------

    def _begin_stop(self, now: float) -> None:
        self._stopping = True
        grace = self._stop_grace if self._stop_grace is not None else self.config.shutdown_grace
        self._grace_deadline = now + grace.total_seconds()
        self._runner.withdraw()
        announce(log, _n("worker.stopping", len(self._runner), worker=self.name,
                         grace=format_duration(grace)))

    def _abort(self, now: float) -> None:
        """Stop now: settle what finished, hand back the jobs whose handlers still run (see
        Runner.hand_back), tell those handlers to stop, renew nothing. A database that
        does not answer leaves the jobs to their leases: they expire and a reap returns them."""
        self._runner.collect(now)  # a handler that just finished: its own outcome, not a hand-back
        if self._runner:
            grace = self._stop_grace if self._stop_grace is not None else self.config.shutdown_grace
            reason = (f"its shutdown grace {format_duration(grace)} ran out"
                      if now >= self._grace_deadline else "a second stop request")
            error = (f"worker {self.name} shut down before the handler finished ({reason}); "
                     "the attempt was stopped and given back")
            count = self._runner.hand_back(now, error)
            if count:
                log.warning(_n("worker.handlers_left_running", count, worker=self.name))
        if self._outbox:
            self._settle_thread.hand(self._outbox.take())
        self._runner.cancel_all(now)
        self._settle_thread.wait(self._watchdog.limit)  # a statement's time at most
        if self._settle_thread.in_flight:
            log.warning(_n("worker.unsettled_at_exit", self._settle_thread.in_flight, worker=self.name,
                           error=self._settle_thread.fatal or "no answer from the database"))
