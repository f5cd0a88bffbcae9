"""What the long-running benchmarks share (python -m bench soak | deep | snapshot):
the server they run on, a database each, PostgreSQL's CPU time, a table's size and
vacuum counters, durations on the command line, percentiles, PASS/FAIL lines.

Each command starts one throwaway cluster (tests/pgcluster.py, durable, the settings
of `bash bench/run`), or, with ``--dsn``, creates its databases on a server you give
it (a superuser DSN on this machine: PostgreSQL's CPU is read from /proc) and drops
them at the end.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import re
import sys
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

import psycopg
from psycopg import sql

from bench.systems import BENCH

sys.path.insert(0, str(BENCH.parent / "tests"))
from pgcluster import Cluster

RESULTS = BENCH / "results"


def log(msg: str) -> None:
    print(f"bench: {msg}", file=sys.stderr, flush=True)


def duration(text: str) -> float:
    """'60s', '2m', '500ms', '1h' or a bare number of seconds, in seconds."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d*)?)\s*(ms|s|m|min|h)?\s*", text)
    if not m:
        raise ValueError(f"not a duration: {text!r} (e.g. 60s, 2m, 500ms)")
    unit = {"ms": 0.001, "s": 1.0, None: 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}[m.group(2)]
    return float(m.group(1)) * unit


def pct(values: Sequence[float], p: float) -> float | None:
    """The p-th percentile (linear between ranks) of unsorted values; None for none."""
    if not values:
        return None
    s = sorted(values)
    k = (len(s) - 1) * p / 100
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


LOOPBACK = {"127.0.0.1", "::1", "localhost"}


def refused_dsn(dsn: str | None) -> str | None:
    """Why a --dsn is refused (None: it is not): a long run loads the server, creates and
    drops databases and reads PostgreSQL's CPU in /proc, so only a server on this machine
    (loopback or a Unix socket) will do."""
    if not dsn:
        return None
    from brooq.redact import shown_dsn
    try:
        d = psycopg.conninfo.conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        return "--dsn is not a connection string"
    hosts = [h for h in str(d.get("hostaddr") or d.get("host") or "").split(",") if h]
    far = [h for h in hosts if h not in LOOPBACK and not h.startswith("/")]
    if far:
        return (f"--dsn {shown_dsn(dsn)}: not a server on this machine; the long runs load "
                "the server, create and drop databases and read its CPU in /proc: give "
                "127.0.0.1, ::1, localhost or a Unix socket")
    return None


def public_args(args: Any) -> dict[str, Any]:
    """The run's arguments for the JSON, --dsn without its password."""
    from brooq.redact import shown_dsn
    out = dict(vars(args))
    if out.get("dsn"):
        out["dsn"] = shown_dsn(out["dsn"])
    return out


class Server:
    """The PostgreSQL server a long run uses, and the databases it made there. A
    password of --dsn goes to PGPASSWORD, inherited by the workers, never into a DSN
    that a worker's command line shows (ps, /proc/PID/cmdline)."""

    def __init__(self, admin_dsn: str, cluster: Cluster | None) -> None:
        parts = psycopg.conninfo.conninfo_to_dict(admin_dsn)
        if password := parts.pop("password", None):
            os.environ["PGPASSWORD"] = str(password)
            admin_dsn = psycopg.conninfo.make_conninfo("", **parts)
        self.admin_dsn = admin_dsn
        self.cluster = cluster
        self.made: list[str] = []
        self.tag = uuid.uuid4().hex[:6]

    def dsn_for(self, dbname: str) -> str:
        """A URL (graphile-worker's node-postgres reads URLs, not key=value strings)."""
        d = psycopg.conninfo.conninfo_to_dict(self.admin_dsn)
        user = quote(str(d.get("user", "postgres")), safe="")
        host = str(d.get("host", "127.0.0.1"))
        port = str(d.get("port", "5432"))
        return f"postgresql://{user}@{host}:{port}/{quote(dbname, safe='')}"

    def create_db(self, what: str) -> str:
        name = f"bench_{what}_{self.tag}"
        with psycopg.connect(self.admin_dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("create database {}").format(sql.Identifier(name)))
        self.made.append(name)
        return self.dsn_for(name)

    def drop_all(self) -> None:
        with psycopg.connect(self.admin_dsn, autocommit=True) as conn:
            for name in self.made:
                conn.execute(sql.SQL("drop database if exists {} with (force)").format(
                    sql.Identifier(name)))
        self.made.clear()

    def settings(self) -> dict[str, str]:
        with psycopg.connect(self.admin_dsn, autocommit=True) as conn:
            rows = conn.execute(
                "select name, setting from pg_settings where name in ('fsync', 'synchronous_commit',"
                " 'shared_buffers', 'max_connections', 'full_page_writes', 'autovacuum',"
                " 'autovacuum_naptime', 'server_version')").fetchall()
        return dict(rows)

    def postmaster_pid(self) -> int | None:
        """The postmaster's pid: a backend's parent (None: not on this machine, or unreadable)."""
        with psycopg.connect(self.admin_dsn, autocommit=True) as conn:
            row = conn.execute("select pg_backend_pid()").fetchone()
        try:
            stat = Path(f"/proc/{row[0] if row else 0}/stat").read_text()
        except OSError:
            return None
        return int(stat.rsplit(")", 1)[1].split()[1])


def installed_brooq(dsn: str) -> None:
    """sql/install.sql into a fresh database."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute((BENCH.parent / "sql" / "install.sql").read_text())


@contextlib.contextmanager
def server(dsn: str | None) -> Iterator[Server]:
    """A throwaway durable cluster, or the server of ``dsn``; databases dropped at the end."""
    if dsn:
        s = Server(dsn, None)
        try:
            yield s
        finally:
            s.drop_all()
        return
    log("starting a throwaway PostgreSQL cluster (fsync on, synchronous_commit on)")
    with Cluster(durable=True) as cluster:
        yield Server(cluster.dsn, cluster)


_TICK = os.sysconf("SC_CLK_TCK")


def postgres_cpu(postmaster: int | None) -> float | None:
    """CPU seconds (user + system) PostgreSQL used so far: the postmaster, its children
    that exited (cutime, cstime: the postmaster waits for them) and those alive."""
    if postmaster is None:
        return None

    def fields(pid: int | str) -> list[str] | None:
        try:
            return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return None

    own = fields(postmaster)
    if own is None:
        return None
    # after "pid (comm)": state ppid ... utime(12) stime(13) cutime(14) cstime(15), 0-based
    ticks = sum(int(own[i]) for i in (11, 12, 13, 14))
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        f = fields(entry.name)
        if f and int(f[1]) == postmaster:
            ticks += int(f[11]) + int(f[12])
    return ticks / _TICK


TABLE_STATS = """
select pg_table_size(c.oid) as heap_bytes, pg_indexes_size(c.oid) as index_bytes,
       s.n_live_tup as live_tuples, s.n_dead_tup as dead_tuples,
       s.autovacuum_count as autovacuum_runs, s.autoanalyze_count as autoanalyze_runs
  from pg_class c join pg_stat_user_tables s on s.relid = c.oid
 where c.oid = %s::regclass"""


def table_stats(conn: psycopg.Connection[Any], table: str) -> dict[str, int]:
    """Heap (with TOAST) and index bytes, live and dead tuples, autovacuum and autoanalyze
    runs so far, of one table (pg_stat_user_tables: a backend reports within a second)."""
    cur = conn.execute(TABLE_STATS, [table])
    row = cur.fetchone()
    assert row is not None and cur.description is not None
    return {d.name: int(v or 0) for d, v in zip(cur.description, row)}


def verdict(ok: bool | None) -> str:
    return "n/a" if ok is None else ("PASS" if ok else "FAIL")


def output(args_json: Path | None, kind: str) -> Path:
    """Where a run writes its JSON: --json, or bench/results/<timestamp>-<kind>.json."""
    if args_json:
        return args_json
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    return RESULTS / f"{stamp}-{kind}.json"


def write(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, default=str) + "\n")


def shown(path: Path) -> str:
    root = BENCH.parent
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)
