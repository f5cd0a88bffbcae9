"""Shared fixtures: one PostgreSQL server for the whole run, brooq deployed by sqitch.

Without BROOQ_TEST_DSN a throwaway cluster is started from the local binaries
(pg_cron preloaded) and removed at the end. With BROOQ_TEST_DSN (a superuser DSN
of a server you own), the tests create and drop their own databases on it.

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
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from pgcluster import Cluster

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Server:
    """A PostgreSQL server the tests may create databases on."""

    admin_dsn: str  # a superuser DSN to the maintenance database
    cluster: Cluster | None  # None when BROOQ_TEST_DSN points at a server we do not own

    def dsn_for(self, dbname: str) -> str:
        return psycopg.conninfo.make_conninfo(self.admin_dsn, dbname=dbname)

    def execute(self, query: sql.Composable | str) -> None:
        with psycopg.connect(self.admin_dsn, autocommit=True) as conn:
            conn.execute(query)

    def create_db(self, name: str, template: str | None = None) -> str:
        if template:
            self.execute(sql.SQL("create database {} template {}").format(
                sql.Identifier(name), sql.Identifier(template)))
        else:
            self.execute(sql.SQL("create database {}").format(sql.Identifier(name)))
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


def dump_schema(dsn: str) -> str:
    """pg_dump -s of schema brooq, without the lines that differ between two dumps."""
    info = psycopg.conninfo.conninfo_to_dict(dsn)
    done = subprocess.run(
        ["pg_dump", "--schema-only", "--schema=brooq", "--no-owner",
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


@pytest.fixture(scope="session")
def server() -> Iterator[Server]:
    if dsn := os.environ.get("BROOQ_TEST_DSN"):
        yield Server(dsn, None)
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
    """The database the pgTAP files run in (pg_cron's database on our own cluster)."""
    owned = server.cluster is not None
    name = "postgres" if owned else f"brooq_tap_{run_id}"
    dsn = server.dsn_for(name) if owned else server.create_db(name)
    sqitch("deploy", "--verify", sqitch_target(dsn))
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("create extension if not exists pgtap")
        if conn.execute("select count(*) from pg_available_extensions where name = 'plpgsql_check'"
                        ).fetchone() == (1,):
            conn.execute("create extension if not exists plpgsql_check")  # the lint's checker
        if owned:
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
