"""A worker over several brooq partitions (docs/scale-out.md).

Composition, not a new loop: one brooq.Worker per partition, each in its own thread,
all sharing the handlers registered here. Each one claims, heartbeats, settles and
reaps on its own partition's connection, so a job is always settled where it was
claimed, and a partition that goes away stops only its own worker's claims: that
worker reconnects with backoff (as a single worker does), the others go on.

Fairness: every partition gets the same `concurrency` (+ prefetch) handler slots of
its own, so a full partition cannot starve an empty one of slots, and slots of a
partition that is down stay idle (the price of the isolation). The settings given
are per partition: concurrency=4 over 4 partitions runs up to 16 handlers.

A partition that cannot be reached when the worker starts is retried every few
seconds (up to 30 s apart) until it answers or the worker stops.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any, TypeVar

from brooq.config import WorkerConfig
from brooq.errors import ConfigError, ConnectError
from brooq.lifecycle import stop_signals
from brooq.redact import one_line
from brooq.snapshot import TopicSnapshot, WorkerSnapshot
from brooq.worker import Worker

log = logging.getLogger("brooq.partitions")

F = TypeVar("F", bound=Callable[..., Any])

RETRY_MAX = 30.0  # seconds between two tries to start the worker of an unreachable partition


class PartitionedWorker:
    """Runs the registered handlers on every partition: one brooq.Worker per DSN.

    ``settings`` are WorkerConfig fields, as for brooq.Worker, applied to each
    partition's worker (the dsn of each is one of ``dsns``; its name is the common
    name followed by ``@p0``, ``@p1``...; only the first serves metrics_address).
    """

    def __init__(self, dsns: Sequence[str], **settings: Any) -> None:
        if not dsns:
            raise ConfigError(["dsns: give at least one partition"])
        if len(set(dsns)) != len(dsns):
            raise ConfigError(["dsns: a partition is given twice"])
        base = WorkerConfig.from_env(dsn=dsns[0], **settings)
        self._setup(base, list(dsns), {})

    @classmethod
    def of(cls, worker: Worker, dsns: Sequence[str]) -> PartitionedWorker:
        """The handlers and settings of ``worker`` (not run), on each of ``dsns``."""
        if not dsns:
            raise ConfigError(["dsns: give at least one partition"])
        pw = cls.__new__(cls)
        pw._setup(worker.config, list(dsns), dict(worker._handlers))
        return pw

    def _setup(self, base: WorkerConfig, dsns: list[str], handlers: dict[str, Any]) -> None:
        self.config = base.with_defaults()
        assert self.config.name is not None
        self.name: str = self.config.name
        self.dsns = dsns
        self._handlers = handlers  # topic -> brooq.attempt.TopicHandler
        self._workers: list[Worker | None] = [None] * len(dsns)
        self._errors: list[BaseException | None] = [None] * len(dsns)
        self._stop = threading.Event()
        self._grace: timedelta | None = None
        self._lock = threading.Lock()
        self._started = False
        self._started_at = 0.0

    # --- registration -------------------------------------------------------------

    def handler(self, topic: str, **options: Any) -> Callable[[F], F]:
        """Register a handler on every partition: the options of brooq.Worker.handler."""
        probe = Worker.from_config(dataclasses.replace(self.config, metrics_address=None))

        def register(fn: F) -> F:
            if self._started:
                raise RuntimeError("register handlers before run()")
            probe.handler(topic, **options)(fn)  # validates and builds the TopicHandler
            if topic in self._handlers:
                raise ValueError(f"topic {topic!r} already has a handler")
            self._handlers[topic] = probe._handlers[topic]
            return fn

        return register

    @property
    def topics(self) -> list[str]:
        return list(self._handlers)

    def _make(self, number: int) -> Worker:
        config = dataclasses.replace(
            self.config, dsn=self.dsns[number], name=f"{self.name}@p{number}",
            metrics_address=self.config.metrics_address if number == 0 else None)
        worker = Worker.from_config(config)
        for h in self._handlers.values():
            worker._handlers[h.topic] = h
            worker._add_topic(h.topic)
        return worker

    # --- control ------------------------------------------------------------------

    def stop(self, grace: timedelta | None = None) -> None:
        """Stop every partition's worker gracefully (a second call: at once)."""
        with self._lock:
            self._grace = grace
            self._stop.set()
            workers = [w for w in self._workers if w is not None]
        for w in workers:
            w.stop(grace)

    def snapshot(self) -> WorkerSnapshot:
        """The sum of the partitions' counters; connected when every partition is."""
        snaps = [w.snapshot() for w in self._workers if w is not None]
        topics: dict[str, TopicSnapshot] = {}
        for s in snaps:
            for t, ts in s.topics.items():
                prev = topics.get(t)
                topics[t] = ts if prev is None else TopicSnapshot(**{
                    f.name: getattr(prev, f.name) + getattr(ts, f.name)
                    for f in dataclasses.fields(TopicSnapshot)})
        counts = {f.name: sum(getattr(s, f.name) for s in snaps)
                  for f in dataclasses.fields(WorkerSnapshot)
                  if f.name not in ("name", "started_at", "connected", "stopping", "topics")}
        return WorkerSnapshot(
            name=self.name, **counts, started_at=self._started_at,
            connected=len(snaps) == len(self.dsns) and all(s.connected for s in snaps),
            stopping=self._stop.is_set(), topics=topics)

    def connected(self) -> list[bool]:
        """Per partition: is its worker connected now."""
        return [w is not None and w.snapshot().connected for w in self._workers]

    # --- run ----------------------------------------------------------------------

    def run(self) -> None:
        """Work on every partition until stop() or SIGTERM/SIGINT (in the main thread).
        Raises the first error when every partition's worker ended on one."""
        if self._started:
            raise RuntimeError("a worker runs once")
        if not self._handlers:
            raise ConfigError(["no handlers: register one with @worker.handler(topic)"])
        self._started = True
        self._started_at = time.monotonic()
        threads = [threading.Thread(target=self._run_one, args=(n,), name=f"brooq-p{n}", daemon=True)
                   for n in range(len(self.dsns))]
        with stop_signals(self._on_signal):
            for t in threads:
                t.start()
            while any(t.is_alive() for t in threads):
                for t in threads:
                    t.join(0.2)  # short: the main thread must come back for signals
        errors = [e for e in self._errors if e is not None]
        if errors and len(errors) == len(self.dsns):
            raise errors[0].with_traceback(None)

    def _on_signal(self) -> None:
        threading.Thread(target=self.stop, daemon=True).start()  # not under a lock in a handler

    def _run_one(self, number: int) -> None:
        tries = 0
        while not self._stop.is_set():
            with self._lock:
                if self._stop.is_set():
                    return
                worker = self._workers[number] = self._make(number)
            try:
                worker.run()
                return
            except ConnectError as exc:  # unreachable at start: try again later
                tries += 1
                delay = min(RETRY_MAX, 0.5 * 2 ** min(tries, 6))
                if tries == 1:
                    log.warning("worker %s: partition %d unreachable (%s); retrying up to every %.0fs",
                                self.name, number, one_line(exc, 200), RETRY_MAX)
                self._stop.wait(delay)
            except BaseException as exc:  # noqa: BLE001 -- kept for run() to raise
                log.error("worker %s: partition %d stopped: %s", self.name, number, one_line(exc, 300))
                self._errors[number] = exc
                return
