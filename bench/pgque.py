"""PgQue (PgQ rebuilt in pure PL/pgSQL) as a system under test of `python -m bench pressure`.

PgQue is neither vendored here nor published as SQL on PyPI or npm (`pgque-py` on
PyPI is a client, without the installer): the bench reads PgQue's installer,
`sql/pgque.sql`, from a copy of its repository that you name with `--pgque-sql` or
`$BROOQ_BENCH_PGQUE_SQL`:

    git clone https://github.com/NikolayS/pgque ~/src/pgque
    bash bench/run pressure --pgque-sql ~/src/pgque

The path may be the clone, its `sql/` directory, the file itself, or a bare git
directory of the repository (read at its HEAD). Without it, PgQue is skipped with a
message. Which commit was installed is not checked: the run records `pgque.version()`.

The queue: one queue `bench`, one consumer `bench` (PgQ's model: a consumer is one
cursor, reading a batch at a time), PgQue's defaults but two, set with its documented
`set_queue_config`: `ticker_max_count` 1, as PgQue's own tick-rate benchmark sets it
(a tick at every tick period that has a new event: with the default 500 and
`ticker_max_lag` 3 s, a queue at 100 events/s ticks every 3 s), and
`rotation_period` 30 s (the default, 2 hours, would never rotate the event tables
within a run of minutes; PgQue's xmin-horizon benchmark uses 15 s).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

import psycopg

from bench.systems import Producer, System, payloads, python_worker

QUEUE = "bench"
CONSUMER = "bench"
ENV = "BROOQ_BENCH_PGQUE_SQL"
QUEUE_CONFIG = (("ticker_max_count", "1"), ("rotation_period", "30 seconds"))


def installer(where: Path) -> str:
    """The text of PgQue's sql/pgque.sql from a clone, its sql/ directory, the file, or a
    bare git directory (HEAD). Raises FileNotFoundError saying where it looked."""
    if where.is_file():
        return where.read_text()
    for candidate in (where / "pgque.sql", where / "sql" / "pgque.sql"):
        if candidate.is_file():
            return candidate.read_text()
    if (where / "HEAD").is_file() and (where / "objects").is_dir():
        done = subprocess.run(["git", f"--git-dir={where}", "show", "HEAD:sql/pgque.sql"],
                              capture_output=True, text=True, check=False)
        if done.returncode == 0:
            return done.stdout
    raise FileNotFoundError(f"no pgque.sql in {where} (a clone of "
                            "https://github.com/NikolayS/pgque, its sql/ directory, the file, "
                            "or a bare git directory)")


class PgQue(System):
    name = "pgque"
    db = "bench_pgque"
    label = "PgQue (one consumer, ticks every 100 ms)"
    schema = "pgque"

    def __init__(self, dsn: str, source: str | None = None) -> None:
        super().__init__(dsn)
        self.source = source or os.environ.get(ENV) or ""

    def available(self) -> str | None:
        if not self.source:
            return (f"no PgQue SQL: give --pgque-sql DIR or set ${ENV} (a clone of "
                    "https://github.com/NikolayS/pgque; see bench/pgque.py)")
        try:
            installer(Path(self.source).expanduser())
        except FileNotFoundError as e:
            return str(e)
        return None

    def install(self) -> None:
        """PgQue's installer in one transaction (as `psql --single-transaction -f`), then
        the queue and its consumer."""
        sql = installer(Path(self.source).expanduser())
        with psycopg.connect(self.dsn) as conn:
            conn.execute(sql)
        self.declare()

    def declare(self) -> None:
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            conn.execute("select pgque.create_queue(%s)", (QUEUE,))
            conn.execute("select pgque.register_consumer(%s, %s)", (QUEUE, CONSUMER))
            for param, value in QUEUE_CONFIG:
                conn.execute("select pgque.set_queue_config(%s, %s, %s)", (QUEUE, param, value))

    def version(self) -> str:
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            row = conn.execute("select pgque.version()").fetchone()
        return str(row[0]) if row else ""

    def reset(self) -> None:
        """The queue dropped (its consumer with it) and made again: no event left, no
        tick, the event tables new. Call it with no worker running."""
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            conn.execute("select pgque.drop_queue(%s, true)", (QUEUE,))
        self.declare()

    def analyze(self) -> None:
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            tables = conn.execute("select format('%%I.%%I', schemaname, relname)"
                                  " from pg_stat_user_tables where schemaname = 'pgque'").fetchall()
            for (table,) in tables:
                conn.execute(f"vacuum analyze {table}")

    def open_producer(self) -> Producer:
        return PgQueProducer(self.dsn)

    def worker_cmd(self, latency: bool, capacity: float | None = None) -> list[str]:
        return python_worker("pgque_worker", {"dsn": self.dsn, "latency": latency, "queue": QUEUE,
                                              "consumer": CONSUMER, "capacity": capacity})


class PgQueProducer(Producer):
    """pgque.insert_event for one event, pgque.send_batch (text[], set-based) for several,
    on one autocommit connection."""

    def __init__(self, dsn: str) -> None:
        self.conn = psycopg.connect(dsn, autocommit=True)

    def bulk(self, seqs: Sequence[int]) -> None:
        self.conn.execute("select pgque.send_batch(%s, 'noop', %s::text[])",
                          (QUEUE, [json.dumps(p) for p in payloads(seqs)]), prepare=True)

    def single(self, seq: int) -> None:
        self.conn.execute("select pgque.insert_event(%s, 'noop', %s)",
                          (QUEUE, json.dumps({"seq": seq})), prepare=True)

    def close(self) -> None:
        self.conn.close()
