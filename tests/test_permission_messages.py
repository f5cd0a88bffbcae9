"""A permission error names the brooq role that grants the right, and granting that
role is enough; a non-superuser deploy that fails says what deploying needs."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import brooq
import psycopg
import pytest
from conftest import Server
from psycopg import sql

Conn = psycopg.Connection[Any]


@pytest.fixture
def login(server: Server, db: str) -> Iterator[tuple[str, str]]:
    """A login role with no brooq role yet, and its DSN to the test's database."""
    role = f"brooq_test_login_{uuid.uuid4().hex[:6]}"
    server.execute(sql.SQL("create role {} login").format(sql.Identifier(role)))
    try:
        yield role, psycopg.conninfo.make_conninfo(db, user=role)
    finally:
        server.drop_db(psycopg.conninfo.conninfo_to_dict(db)["dbname"] or "")
        server.execute(sql.SQL("drop role {}").format(sql.Identifier(role)))


# call -> (the role the error must name, the roles the login has meanwhile, the call)
CALLS: dict[str, tuple[str, list[str], Callable[[Conn], Any]]] = {
    "enqueue": ("brooq_producer", ["brooq_worker"], lambda c: brooq.enqueue(c, "t", {})),
    "enqueue_many": ("brooq_producer", ["brooq_worker"], lambda c: brooq.enqueue_many(c, "t", [{}])),
    "get_job": ("brooq_producer", [], lambda c: brooq.get_job(c, 1)),  # any brooq role reads it
    "cancel": ("brooq_admin", ["brooq_producer", "brooq_worker"], lambda c: brooq.cancel(c, 1)),
    "declare_topic": ("brooq_admin", ["brooq_producer", "brooq_worker"],
                      lambda c: brooq.declare_topic(c, "t")),
    "topic_stats": ("brooq_worker", ["brooq_producer"], lambda c: brooq.topic_stats(c)),
}


@pytest.mark.parametrize("call", list(CALLS))
def test_a_permission_error_names_the_role_that_grants_it(
        call: str, login: tuple[str, str], conn: Conn, server: Server) -> None:
    role, dsn = login
    needs, others, run = CALLS[call]
    brooq.declare_topic(conn, "t")
    for other in others:  # roles that do not grant it
        conn.execute(sql.SQL("grant {} to {}").format(sql.Identifier(other), sql.Identifier(role)))
    with psycopg.connect(dsn, autocommit=True) as c:
        with pytest.raises(brooq.PermissionDenied) as raised:
            run(c)
        assert f"grant {needs} to {role}" in str(raised.value), str(raised.value)
        assert raised.value.sqlstate == "42501"
    conn.execute(sql.SQL("grant {} to {}").format(sql.Identifier(needs), sql.Identifier(role)))
    with psycopg.connect(dsn, autocommit=True) as c:
        run(c)  # the role named is enough


def test_a_worker_without_brooq_worker_says_so(login: tuple[str, str], conn: Conn) -> None:
    role, dsn = login
    conn.execute(sql.SQL("grant brooq_producer to {}").format(sql.Identifier(role)))
    worker = brooq.Worker(dsn, lease=timedelta(seconds=2))

    @worker.handler("t")
    def handle(job: brooq.Job) -> None:
        pass

    with pytest.raises(brooq.PermissionDenied, match=f"grant brooq_worker to {role}"):
        worker.run()


def test_the_cli_names_the_role_in_one_line(login: tuple[str, str], conn: Conn) -> None:
    role, dsn = login
    conn.execute(sql.SQL("grant brooq_producer to {}").format(sql.Identifier(role)))
    brooq_cli = str(Path(sys.executable).with_name("brooq"))
    done = subprocess.run([brooq_cli, "cancel", "1", "--dsn", dsn], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 1
    assert done.stderr.startswith(
        f"brooq: error: permission denied for function cancel: grant brooq_admin to {role}"), done.stderr
    assert "[42501 insufficient_privilege]" in done.stderr and done.stderr.count("\n") == 1


def test_a_non_superuser_deploy_says_what_it_needs(server: Server) -> None:
    from brooq.tools.deploy import DeployError, deploy

    role = f"brooq_test_deployer_{uuid.uuid4().hex[:6]}"
    name = f"brooq_dep_{uuid.uuid4().hex[:10]}"
    dsn = psycopg.conninfo.make_conninfo(server.create_db(name), user=role)
    server.execute(sql.SQL("create role {} login").format(sql.Identifier(role)))
    try:
        with pytest.raises(DeployError) as raised:
            deploy(dsn, method="sqitch")
        message = str(raised.value)
        assert f"deploying as {role}, not a superuser, needs: CREATE on the database " \
               f"(grant create on database {name} to {role})" in message, message
        assert "docs/security.md" in message
        assert f"CREATEROLE (alter role {role} createrole)" in message, message
        # what it said is enough
        server.execute(sql.SQL("grant create on database {} to {}").format(
            sql.Identifier(name), sql.Identifier(role)))
        server.execute(sql.SQL("alter role {} createrole").format(sql.Identifier(role)))
        assert deploy(dsn, method="sqitch").method == "sqitch"
    finally:
        server.drop_db(name)
        server.execute(sql.SQL("drop role {}").format(sql.Identifier(role)))
