"""The systems under test: how each installs its schema, enqueues, resets and works.

Every system enqueues the same jobs: a no-op task whose payload is {"seq": i}.
Enqueueing runs in the orchestrator's process (Python, psycopg, autocommit, so
every call is its own transaction); workers run as subprocesses (bench/workers/).
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
TOPIC = "bench"


def payloads(seqs: Sequence[int]) -> list[dict[str, int]]:
    return [{"seq": s} for s in seqs]


def chunks(seqs: range, size: int) -> list[range]:
    return [seqs[i:i + size] for i in range(0, len(seqs), size)]


class System:
    """One queue under test, in its own database `db`."""

    name = ""
    db = ""
    label = ""
    bulk_batch = 5000
    enqueue_owner = ""  # a variant sharing another system's enqueue path names it here
    jobs_table = ""

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn

    def available(self) -> str | None:
        """None when the system can run here, else why not."""
        return None

    def install(self) -> None:
        raise NotImplementedError

    def reset(self) -> None:
        """Remove every job, as after a fresh install."""
        raise NotImplementedError

    def analyze(self) -> None:
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            conn.execute(f"vacuum analyze {self.jobs_table}")

    def open_producer(self) -> Producer:
        raise NotImplementedError

    def worker_cmd(self, latency: bool) -> list[str]:
        raise NotImplementedError

    remaining_sql = ""

    def remaining(self) -> int:
        """How many jobs are not finished yet (the drain's check that all were settled)."""
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            row = conn.execute(self.remaining_sql).fetchone()
            return int(row[0]) if row else 0


class Producer:
    """A connection that enqueues: `bulk(seqs)` in one call, `single(seq)` one job."""

    def bulk(self, seqs: Sequence[int]) -> None:
        raise NotImplementedError

    def single(self, seq: int) -> None:
        raise NotImplementedError

    def close(self) -> None:
        pass


def python_worker(module: str, cfg: dict[str, Any]) -> list[str]:
    return [sys.executable, "-m", f"bench.workers.{module}", json.dumps(cfg)]


# ---------------------------------------------------------------------------- brooq

class Brooq(System):
    name = "brooq"
    db = "bench_brooq"
    label = "brooq.Worker"
    jobs_table = "brooq.job"
    remaining_sql = "select count(*) from brooq.job where state <> 'done'"
    # The Python guide's advice for short handlers: a claim takes free threads +
    # prefetch jobs, so a large prefetch, not more threads, makes the large batches
    # (200 threads and prefetch 200 drained as fast, with 3 MiB more: docs/performance.md).
    concurrency = 20
    prefetch = 380

    def install(self) -> None:
        sql = (ROOT / "sql" / "install.sql").read_text()
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            conn.execute(sql)
            conn.execute("select brooq.declare_topic(%s)", (TOPIC,))

    def reset(self) -> None:
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            conn.execute("truncate brooq.job")

    def open_producer(self) -> Producer:
        return BrooqProducer(self.dsn)

    def worker_cmd(self, latency: bool) -> list[str]:
        return brooq_worker(self.dsn, latency)


def brooq_worker(dsn: str, latency: bool, handler: dict[str, Any] | None = None) -> list[str]:
    """The command of one brooq.Worker process; ``handler``: the topic settings it
    declares at start (Worker.handler)."""
    return python_worker("brooq_worker", {"dsn": dsn, "latency": latency,
                                          "concurrency": Brooq.concurrency,
                                          "prefetch": Brooq.prefetch, "handler": handler or {}})


class BrooqSql(Brooq):
    name = "brooq-sql"
    label = "bare SQL loop"
    enqueue_owner = "brooq"
    batch = 100

    def worker_cmd(self, latency: bool) -> list[str]:
        return python_worker("brooq_sql", {"dsn": self.dsn, "latency": latency,
                                           "batch": self.batch})


class BrooqProducer(Producer):
    """brooq.enqueue_many / brooq.enqueue of the Python package (plain SQL calls before it
    existed), on one autocommit psycopg connection."""

    def __init__(self, dsn: str) -> None:
        self.conn = psycopg.connect(dsn, autocommit=True)
        import brooq
        self.enqueue_many = getattr(brooq, "enqueue_many", None)
        self.enqueue = getattr(brooq, "enqueue", None)

    def bulk(self, seqs: Sequence[int]) -> None:
        if self.enqueue_many:
            self.enqueue_many(self.conn, TOPIC, payloads(seqs))
        else:
            self.conn.execute("select count(*) from brooq.enqueue_many(%s, %s)",
                              (TOPIC, [Jsonb(p) for p in payloads(seqs)]), prepare=True)

    def single(self, seq: int) -> None:
        if self.enqueue:
            self.enqueue(self.conn, TOPIC, {"seq": seq})
        else:
            self.conn.execute("select id from brooq.enqueue(%s, %s)",
                              (TOPIC, Jsonb({"seq": seq})), prepare=True)

    def insert(self, seq: int) -> None:
        """The baseline: a bare INSERT into the same table, one per commit."""
        self.conn.execute(
            "insert into brooq.job (topic, payload, max_attempts, available_at, created_at,"
            " updated_at) values (%s, %s, 5, now(), now(), now())",
            (TOPIC, Jsonb({"seq": seq})), prepare=True)

    def close(self) -> None:
        self.conn.close()


# -------------------------------------------------------------------- procrastinate

class Procrastinate(System):
    name = "procrastinate"
    db = "bench_procrastinate"
    label = "procrastinate"
    jobs_table = "procrastinate_jobs"
    remaining_sql = "select count(*) from procrastinate_jobs where status in ('todo', 'doing')"
    concurrency = 10

    def _app(self) -> Any:
        import procrastinate
        app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=self.dsn))
        return app

    def install(self) -> None:
        app = self._app()
        with app.open():
            app.schema_manager.apply_schema()

    def reset(self) -> None:
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            conn.execute("truncate procrastinate_jobs cascade")

    def open_producer(self) -> Producer:
        return ProcrastinateProducer(self._app())


    def worker_cmd(self, latency: bool) -> list[str]:
        return python_worker("procrastinate_worker", {"dsn": self.dsn, "latency": latency,
                                                      "concurrency": self.concurrency})


class ProcrastinateProducer(Producer):
    def __init__(self, app: Any) -> None:
        self.app = app.open()
        self.task = app.configure_task(name="noop", queue="bench")

    def bulk(self, seqs: Sequence[int]) -> None:
        self.task.batch_defer(*payloads(seqs))

    def single(self, seq: int) -> None:
        self.task.defer(seq=seq)

    def close(self) -> None:
        self.app.close()


# ------------------------------------------------------------------------- pgqueuer

class PgQueuer(System):
    name = "pgqueuer"
    db = "bench_pgqueuer"
    label = "pgqueuer"
    jobs_table = "pgqueuer"
    remaining_sql = "select count(*) from pgqueuer"  # finished jobs move to pgqueuer_log
    batch_size = 10

    def install(self) -> None:
        async def go() -> None:
            from pgqueuer import PsycopgDriver, Queries
            async with await psycopg.AsyncConnection.connect(self.dsn, autocommit=True) as conn:
                await Queries(PsycopgDriver(conn)).install()
        asyncio.run(go())

    def reset(self) -> None:
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            conn.execute("truncate pgqueuer, pgqueuer_log")

    def open_producer(self) -> Producer:
        return PgQueuerProducer(self.dsn)


    def worker_cmd(self, latency: bool) -> list[str]:
        return python_worker("pgqueuer_worker", {"dsn": self.dsn, "latency": latency,
                                                 "batch_size": self.batch_size})


class PgQueuerProducer(Producer):
    def __init__(self, dsn: str) -> None:
        from pgqueuer import PsycopgDriver, Queries
        self.loop = asyncio.new_event_loop()
        self.conn = self.loop.run_until_complete(
            psycopg.AsyncConnection.connect(dsn, autocommit=True))
        self.queries = Queries(PsycopgDriver(self.conn))

    def bulk(self, seqs: Sequence[int]) -> None:
        data = [json.dumps(p).encode() for p in payloads(seqs)]
        self.loop.run_until_complete(
            self.queries.enqueue(["noop"] * len(data), list(data), [0] * len(data)))

    def single(self, seq: int) -> None:
        self.loop.run_until_complete(
            self.queries.enqueue("noop", json.dumps({"seq": seq}).encode()))

    def close(self) -> None:
        self.loop.run_until_complete(self.conn.close())
        self.loop.close()


# ------------------------------------------------------------------ graphile-worker

class Graphile(System):
    name = "graphile"
    db = "bench_graphile"
    label = "graphile-worker (concurrency 24)"
    jobs_table = "graphile_worker._private_jobs"
    remaining_sql = "select count(*) from graphile_worker._private_jobs"  # done = deleted
    batched = False

    def available(self) -> str | None:
        if not shutil.which("node"):
            return "node is not installed (apt-get install nodejs)"
        if not (BENCH / "node_modules" / "graphile-worker").is_dir():
            return "bench/node_modules/graphile-worker is missing (npm install failed?)"
        return None

    def _cfg(self, **more: Any) -> str:
        return json.dumps({"dsn": self.dsn, "batched": self.batched, **more})

    def install(self) -> None:
        subprocess.run(["node", str(BENCH / "workers" / "graphile_worker.mjs"),
                        self._cfg(migrate=True)], check=True, cwd=BENCH)

    def reset(self) -> None:
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            conn.execute("truncate graphile_worker._private_jobs cascade")

    def open_producer(self) -> Producer:
        return GraphileProducer(self.dsn)


    def worker_cmd(self, latency: bool) -> list[str]:
        return ["node", str(BENCH / "workers" / "graphile_worker.mjs"), self._cfg(latency=latency)]


class GraphileBatched(Graphile):
    name = "graphile-batched"
    label = "graphile-worker (localQueue 500, batched completion)"
    enqueue_owner = "graphile"
    batched = True


class GraphileProducer(Producer):
    def __init__(self, dsn: str) -> None:
        self.conn = psycopg.connect(dsn, autocommit=True)

    def bulk(self, seqs: Sequence[int]) -> None:
        # the ids, as addJobs returns the jobs (and as every other system returns ids)
        self.conn.execute(
            "select id from graphile_worker.add_jobs(array("
            "select row('noop', p, null, null, null, null, null, null)::graphile_worker.job_spec"
            " from unnest(%s::json[]) p))",
            ([json.dumps(p) for p in payloads(seqs)],), prepare=True).fetchall()

    def single(self, seq: int) -> None:
        self.conn.execute("select id from graphile_worker.add_job('noop', %s::json)",
                          (json.dumps({"seq": seq}),), prepare=True)

    def close(self) -> None:
        self.conn.close()


SYSTEMS: dict[str, type[System]] = {
    s.name: s for s in (Brooq, BrooqSql, Procrastinate, PgQueuer, Graphile, GraphileBatched)
}
