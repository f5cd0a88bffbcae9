"""Topics that stay tidy: a worker that creates a topic says so at WARNING (a typo'd
`emial` is visible), a worker that may not declare topics says that a topic does not
exist before anything else of it, and `brooq drop-topic` removes a topic."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from typing import Any

import brooq
import psycopg
import pytest
from helpers import FAST, brooq_cli, running

Conn = psycopg.Connection[Any]


def worker(dsn: str, *topics: str) -> brooq.Worker:
    w = brooq.Worker(dsn, name="tidy", **FAST)
    for topic in topics:
        w.handler(topic)(lambda job: None)
    return w


def test_a_worker_that_creates_a_topic_says_so_at_warning(db: str, caplog: pytest.LogCaptureFixture) -> None:
    with psycopg.connect(db, autocommit=True) as conn:
        brooq.declare_topic(conn, "email")
    with caplog.at_level(logging.INFO, logger="brooq.worker"), running(worker(db, "email", "emial")):
        pass
    created = [r for r in caplog.records if "created topic" in r.getMessage()]
    assert [(r.levelno, r.getMessage()) for r in created] == [
        (logging.WARNING, ("worker tidy: created topic emial, which did not exist, and topic email does "
                           "(a typo? brooq drop-topic emial removes it)"))]
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="brooq.worker"), running(worker(db, "email", "emial")):
        pass
    assert not [r for r in caplog.records if "created topic" in r.getMessage()], "declared already: no warning"


def test_a_new_topic_with_no_close_name_is_info_not_a_typo(db: str, caplog: pytest.LogCaptureFixture) -> None:
    with psycopg.connect(db, autocommit=True) as conn:
        brooq.declare_topic(conn, "email")
    with caplog.at_level(logging.INFO, logger="brooq.worker"), running(worker(db, "email", "keep")):
        pass
    created = [r for r in caplog.records if "created topic" in r.getMessage()]
    assert [(r.levelno, r.getMessage()) for r in created] == [(logging.INFO, "worker tidy: created topic keep")]


@pytest.fixture
def worker_dsn(conn: Conn, db: str) -> Iterator[str]:
    """A login with brooq_worker only: it may not declare topics."""
    role = f"tidy_worker_{uuid.uuid4().hex[:8]}"
    conn.execute(f"create role {role} login in role brooq_worker")
    try:
        yield psycopg.conninfo.make_conninfo(db, user=role)
    finally:
        conn.execute(f"drop role {role}")


def test_a_worker_that_may_not_declare_says_first_that_a_topic_does_not_exist(
        conn: Conn, worker_dsn: str, caplog: pytest.LogCaptureFixture) -> None:
    brooq.declare_topic(conn, "email")
    w = worker(worker_dsn, "email", "emial")
    with caplog.at_level(logging.INFO, logger="brooq.worker"), pytest.raises(brooq.ConfigError) as raised:
        w.run()
    assert raised.value.problems == [
        ("topic emial does not exist, and this worker may not declare it (declaring needs brooq_admin): "
         "an admin declares it with brooq declare-topic emial")]
    lines = [r.getMessage() for r in caplog.records]
    assert not [line for line in lines if "using the settings in the database" in line], lines
    assert not [line for line in lines if "started" in line], "it stops before it starts"

    brooq.declare_topic(conn, "emial")  # an admin declares it: the worker starts, saying whose settings it uses
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="brooq.worker"), running(worker(worker_dsn, "email", "emial")):
        pass
    kept = [r for r in caplog.records if "using the settings in the database" in r.getMessage()]
    assert [(r.levelno, r.getMessage().split(": ")[1]) for r in kept] == [
        (logging.INFO, "topic email"), (logging.INFO, "topic emial")]


def test_drop_topic_from_the_command_line(conn: Conn, db: str) -> None:
    brooq.declare_topic(conn, "emial")
    brooq.enqueue_many(conn, "emial", [{}, {}])
    refused = brooq_cli("drop-topic", "emial", dsn=db)
    assert refused.returncode == 1
    assert 'topic "emial" still has 2 jobs' in refused.stderr and "[55006 object_in_use]" in refused.stderr
    assert "hint: brooq drop-topic emial --force deletes" in refused.stderr, refused.stderr
    forced = brooq_cli("drop-topic", "emial", "--force", dsn=db)
    assert (forced.returncode, forced.stdout) == (0, "dropped topic emial and its 2 jobs\n"), forced.stderr
    brooq.declare_topic(conn, "typo")
    done = brooq_cli("drop-topic", "typo", dsn=db)
    assert (done.returncode, done.stdout) == (0, "dropped topic typo\n"), done.stderr
    gone = brooq_cli("drop-topic", "typo", dsn=db)
    assert gone.returncode == 1 and 'topic "typo" does not exist' in gone.stderr
    assert conn.execute("select count(*) from brooq.topics").fetchone() == (0,)


def test_schedule_from_the_command_line_without_pg_cron_is_ticked_by_the_workers(conn: Conn, db: str) -> None:
    brooq.declare_topic(conn, "report")
    done = brooq_cli("schedule", "nightly", "0 3 * * *", "report", '{"kind": "nightly"}', dsn=db)
    assert (done.returncode, done.stdout) == (
        0, "scheduled nightly: '0 3 * * *' enqueues a job of topic report each time, ticked by the running workers\n"
    ), done.stderr
    refused = brooq_cli("schedule", "cron", "0 3 * * *", "report", "--ticker", "pg_cron", dsn=db)
    assert refused.returncode == 1 and "[55000 object_not_in_prerequisite_state]" in refused.stderr
    listed = brooq_cli("schedule", "--list", dsn=db).stdout.splitlines()
    assert listed[0].split() == ["name", "cron", "ticker", "topic", "payload", "priority", "next", "tick",
                                 "last", "tick", "last", "job"]
    assert listed[2].split()[:7] == ["nightly", "0", "3", "*", "*", "*", "workers"]
