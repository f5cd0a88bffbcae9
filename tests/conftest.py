"""Shared fixtures: one PostgreSQL server for the whole run, brooq deployed by sqitch.

Without BROOQ_TEST_DSN a throwaway cluster is started from the local binaries
(pg_cron preloaded) and removed at the end; BROOQ_TEST_POSTGRES=container:17 (or
container:<image>) starts a container instead (tests/pgcluster.py), removed at the end.
With BROOQ_TEST_DSN (a superuser DSN of a server you own), the tests create and drop
their own databases on it.

Databases:
  - `tap_db`: brooq deployed with `sqitch deploy --verify`, plus pgTAP and pg_cron
    (when available); the pgTAP files run there, each in a rolled-back transaction.
  - `template_db`: brooq deployed by sqitch; `db` clones it into a fresh database
    per test, so tests with real workers and kill -9 never see each other's jobs.
  - `empty_db`: a fresh database without brooq, per test (deploy and upgrade tests).

Plain helpers (the `brooq` command, declare, enqueue, fate, wait_for, a worker in a
thread) are in tests/helpers.py.
"""

from __future__ import annotations

import os
import subprocess
import uuid
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from pgcluster import Cluster, Container, choice, client_tool

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Server:
    """A PostgreSQL server the tests may create databases on."""

    admin_dsn: str  # a superuser DSN to the maintenance database
    # The throwaway cluster; None for a container and for a BROOQ_TEST_DSN server (the tests
    # that stop, restart or reconfigure the server take their other path, or skip saying why).
    cluster: Cluster | None
    container: Container | None = None  # BROOQ_TEST_POSTGRES=container:...

    @property
    def owned(self) -> bool:
        """Started by this run (a cluster or a container), not a server we were lent."""
        return self.cluster is not None or self.container is not None

    def dsn_for(self, dbname: str) -> str:
        return psycopg.conninfo.make_conninfo(self.admin_dsn, dbname=dbname)

    def execute(self, query: sql.Composable | str) -> None:
        with psycopg.connect(self.admin_dsn, autocommit=True) as conn:
            conn.execute(query)

    def default_encoding(self) -> str:
        """The encoding of a database created without one (template1's)."""
        with psycopg.connect(self.admin_dsn, autocommit=True) as conn:
            conn.execute("set client_encoding to 'UTF8'")  # SQL_ASCII would give bytes
            row = conn.execute("select pg_encoding_to_char(encoding) from pg_database"
                               " where datname = 'template1'").fetchone()
        return str(row[0]) if row else "?"

    def create_db(self, name: str, template: str | None = None) -> str:
        if template:
            self.execute(sql.SQL("create database {} template {}").format(
                sql.Identifier(name), sql.Identifier(template)))
        elif self.default_encoding() == "UTF8":
            self.execute(sql.SQL("create database {}").format(sql.Identifier(name)))
        else:
            # brooq needs UTF-8 (README, "Supported PostgreSQL"): a server whose databases
            # default to another encoding (SQL_ASCII: initdb under the POSIX locale) gets
            # UTF-8 ones, said once per run.
            if not _warned_encoding:
                _warned_encoding.append(True)
                warnings.warn(f"the server creates {self.default_encoding()} databases by default;"
                              " brooq needs UTF8, so the tests create theirs with encoding UTF8"
                              " from template0 (locale C)", stacklevel=2)
            self.execute(sql.SQL("create database {} template template0 encoding 'UTF8'"
                                 " lc_collate 'C' lc_ctype 'C'").format(sql.Identifier(name)))
        return self.dsn_for(name)

    def drop_db(self, name: str) -> None:
        self.execute(sql.SQL("drop database if exists {} with (force)").format(sql.Identifier(name)))


def sqitch_target(dsn: str) -> str:
    info = psycopg.conninfo.conninfo_to_dict(dsn)
    user = info.get("user", "postgres")
    host = info.get("host", "127.0.0.1")
    port = info.get("port", "5432")
    return f"db:pg://{user}@{host}:{port}/{info['dbname']}"


def sqitch(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """Run sqitch from the repository root (or cwd); raises with its output on failure."""
    done = subprocess.run(["sqitch", *args], cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        raise AssertionError(f"sqitch {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
    return done


_warned_encoding: list[bool] = []

# pg_dump refuses a server newer than itself: on a container, the container's own runs.
PG_DUMP: list[str] = ["pg_dump"]


def dump_schema(dsn: str) -> str:
    """pg_dump -s of schema brooq, without the lines that differ between two dumps."""
    info = psycopg.conninfo.conninfo_to_dict(dsn)
    done = subprocess.run(
        [*PG_DUMP, "--schema-only", "--schema=brooq", "--no-owner",
         "-h", str(info.get("host")), "-p", str(info.get("port")), "-U", str(info.get("user")),
         str(info["dbname"])],
        capture_output=True, text=True, check=True)
    return "\n".join(line for line in done.stdout.splitlines()
                     if not line.startswith(("-- Dumped", "\\restrict", "\\unrestrict")))


def psql_file(dsn: str, path: Path) -> None:
    """Apply an SQL file with psql, stopping at the first error."""
    done = subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", dsn, "-f", str(path)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise AssertionError(f"psql -f {path} failed:\n{done.stderr}")


def pytest_report_header(config: pytest.Config) -> str:
    if os.environ.get("BROOQ_TEST_DSN"):
        return "brooq: PostgreSQL at $BROOQ_TEST_DSN"
    return f"brooq: PostgreSQL {choice()} (BROOQ_TEST_POSTGRES)"


@pytest.fixture(scope="session")
def server() -> Iterator[Server]:
    where = choice()
    if dsn := os.environ.get("BROOQ_TEST_DSN"):
        if where != "local":
            raise pytest.UsageError(f"BROOQ_TEST_DSN and BROOQ_TEST_POSTGRES={where} both name a "
                                    "server: set one")
        yield Server(dsn, None)
        return
    if where != "local":
        container = Container(where.removeprefix("container:"), durable=False).start()
        PG_DUMP[:] = client_tool("pg_dump", container)
        try:
            yield Server(container.dsn, None, container)
        finally:
            container.stop()
        return
    cluster = Cluster(durable=False).start()
    try:
        yield Server(cluster.dsn, cluster)
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def run_id() -> str:
    return uuid.uuid4().hex[:8]


@pytest.fixture(scope="session")
def template_db(server: Server, run_id: str) -> Iterator[str]:
    """A database with brooq deployed by sqitch; cloned by `db`."""
    name = f"brooq_template_{run_id}"
    dsn = server.create_db(name)
    sqitch("deploy", "--verify", sqitch_target(dsn))
    try:
        yield name
    finally:
        server.drop_db(name)


@pytest.fixture(scope="session")
def tap_dsn(server: Server, run_id: str) -> Iterator[str]:
    """The database the pgTAP files run in (pg_cron's database on our own cluster or
    container). A server without pgTAP skips them, saying so; one without pg_cron or
    plpgsql_check runs them, and the files skip the assertions that need the extension
    (a warning in the summary names it)."""
    owned = server.owned
    with psycopg.connect(server.admin_dsn, autocommit=True) as conn:
        conn.execute("set client_encoding to 'UTF8'")  # a SQL_ASCII server would give bytes
        available = {name for (name,) in conn.execute(
            "select name from pg_available_extensions"
            " where name in ('pgtap', 'plpgsql_check', 'pg_cron')")}
        preloaded = "pg_cron" in str(conn.execute(
            "select current_setting('shared_preload_libraries')").fetchone())
    what = server.container.image if server.container else "the test server"
    if "pgtap" not in available:
        pytest.skip(f"pgTAP is not installed on {what}: the pgTAP files need it "
                    "(Debian: postgresql-<major>-pgtap; tests/images/build's images have it)")
    # pg_cron lives in one database (cron.database_name, 'postgres' where we start the server)
    # and needs shared_preload_libraries: our own cluster always preloads it.
    cron = server.cluster is not None or (owned and preloaded)
    if "plpgsql_check" not in available:
        warnings.warn(f"plpgsql_check is not installed on {what}: lint.sql's check of every "
                      "PL/pgSQL routine is skipped", stacklevel=1)
    if not cron:
        why = "not installed" if "pg_cron" not in available else (
            "not preloaded" if owned else "in another database than the pgTAP files'")
        warnings.warn(f"pg_cron is {why} on {what}: the pgTAP files skip their pg_cron "
                      "assertions", stacklevel=1)
    name = "postgres" if owned else f"brooq_tap_{run_id}"
    dsn = server.dsn_for(name) if owned else server.create_db(name)
    sqitch("deploy", "--verify", sqitch_target(dsn))
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("create extension if not exists pgtap")
        if "plpgsql_check" in available:
            conn.execute("create extension if not exists plpgsql_check")  # the lint's checker
        if cron:
            conn.execute("create extension if not exists pg_cron")
    try:
        yield dsn
    finally:
        if not owned:
            server.drop_db(name)


@pytest.fixture
def db(server: Server, template_db: str) -> Iterator[str]:
    """A fresh database with brooq deployed, just for this test; its DSN."""
    name = f"brooq_t_{uuid.uuid4().hex[:12]}"
    dsn = server.create_db(name, template=template_db)
    try:
        yield dsn
    finally:
        server.drop_db(name)


@pytest.fixture
def empty_db(server: Server) -> Iterator[str]:
    """A fresh database without brooq, just for this test; its DSN."""
    name = f"brooq_empty_{uuid.uuid4().hex[:10]}"
    dsn = server.create_db(name)
    try:
        yield dsn
    finally:
        server.drop_db(name)


@pytest.fixture
def conn(db: str) -> Iterator[psycopg.Connection[tuple[object, ...]]]:
    """An autocommit connection to the test's own database."""
    with psycopg.connect(db, autocommit=True) as c:
        yield c
