"""brooq's pytest plugin: a database with brooq deployed for the test session, and a
connection per test whose work is rolled back at its end (docs/testing.md).

Loaded by ``pytest -p brooq.testing`` (or ``pytest_plugins = ["brooq.testing"]`` in the
root conftest.py): it only defines fixtures, and nothing starts until a test asks for
one. The database lives on the server of $BROOQ_TEST_DSN (a superuser's DSN: a fresh
database is created there and dropped at the end, no other is touched), else in a
throwaway cluster of the local PostgreSQL binaries (brooq.tools.cluster, what `brooq
demo` starts), removed at the end.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import psycopg
import pytest
from psycopg import sql

from brooq import queries
from brooq.tools.cluster import Cluster, NoServer
from brooq.tools.deploy import DeployError, deploy

DSN_VARIABLE = "BROOQ_TEST_DSN"


@contextmanager
def database(server_dsn: str | None = None) -> Iterator[str]:
    """A fresh database with brooq deployed, dropped at the end: its DSN. On the server of
    ``server_dsn`` (a superuser's; default $BROOQ_TEST_DSN), else in a throwaway cluster."""
    server_dsn = server_dsn or os.environ.get(DSN_VARIABLE) or None
    if server_dsn is not None:
        with _fresh_database(server_dsn) as dsn:
            yield dsn
        return
    try:
        cluster = Cluster(durable=False).start()
    except NoServer as exc:
        raise NoServer(f"{exc}; or set {DSN_VARIABLE} to a superuser's DSN of a PostgreSQL "
                       "server of yours (a database is created there for the session)") from exc
    try:
        with _fresh_database(cluster.dsn) as dsn:
            yield dsn
    finally:
        cluster.stop()


@contextmanager
def _fresh_database(server_dsn: str) -> Iterator[str]:
    name = f"brooq_test_{uuid.uuid4().hex[:10]}"
    try:
        # client_encoding: a SQL_ASCII server would give bytes
        with psycopg.connect(server_dsn, autocommit=True, client_encoding="UTF8") as admin:
            row = admin.execute(queries.TESTING_DEFAULT_ENCODING).fetchone()
            create = (queries.TESTING_CREATE_DATABASE if row and row[0] == "UTF8"
                      else queries.TESTING_CREATE_DATABASE_UTF8)  # brooq needs UTF-8
            admin.execute(sql.SQL(create).format(sql.Identifier(name)))
    except psycopg.Error as exc:
        raise RuntimeError(f"brooq.testing: cannot create a test database on the server of "
                           f"{DSN_VARIABLE} ({_where(server_dsn)}): {exc}; {DSN_VARIABLE} must be "
                           "a DSN of a role that may create databases") from exc
    dsn = psycopg.conninfo.make_conninfo(server_dsn, dbname=name)
    try:
        try:  # psql -f sql/install.sql: one transaction, the fastest; sqitch without psql
            deploy(dsn, method="psql" if shutil.which("psql") else "auto")
        except DeployError as exc:
            raise RuntimeError(f"brooq.testing: cannot deploy brooq into {name}: {exc}") from exc
        yield dsn
    finally:
        with psycopg.connect(server_dsn, autocommit=True) as admin:
            admin.execute(sql.SQL(queries.TESTING_DROP_DATABASE).format(sql.Identifier(name)))


def _where(dsn: str) -> str:
    """host:port/dbname of a DSN, without its password."""
    try:
        info = psycopg.conninfo.conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        return "an invalid DSN"
    return f"{info.get('host', 'localhost')}:{info.get('port', 5432)}/{info.get('dbname', '')}"


@pytest.fixture(scope="session")
def brooq_dsn() -> Iterator[str]:
    """The DSN of this session's database, brooq deployed, as a superuser. What a test
    commits there stays for the tests after it: prefer brooq_conn."""
    with ExitStack() as stack:
        try:
            dsn = stack.enter_context(database())
        except (NoServer, RuntimeError) as exc:
            pytest.fail(f"brooq.testing: {exc}", pytrace=False)
        yield dsn


@pytest.fixture
def brooq_conn(brooq_dsn: str) -> Iterator[psycopg.Connection[Any]]:
    """A connection to the session's database, in a transaction rolled back at the end of
    the test: what the test and the code it calls enqueue, declare or drain there is
    gone for the next test. A commit() inside it raises."""
    with psycopg.connect(brooq_dsn) as conn, conn.transaction(force_rollback=True):
        yield conn
