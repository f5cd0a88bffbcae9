"""brooq.testing against a real PostgreSQL: drain runs handlers through the real claim and
settle (a retry after its backoff, a dead job, chained jobs and a workflow's child, jobs
scheduled for later, the max_jobs bound), assert_enqueued and refute_enqueued say what
was enqueued instead, the pytest plugin gives each test a rolled-back connection (run by
pytester in a pytest of its own), and every example of docs/testing.md runs: the plain
pytest one under the plugin, the Django one with `manage.py test` in tests/django_project.

The drain tests use the plugin's own brooq_conn, on this test's fresh database (`db`)
instead of a session database of the plugin's."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import brooq
import psycopg
import pytest
from brooq.testing import (
    DrainLimit,
    assert_enqueued,
    declare_topics,
    drain,
    refute_enqueued,
)
from brooq.testing.plugin import brooq_conn
from conftest import ROOT, Server

pytest_plugins = ["pytester"]

Conn = psycopg.Connection[Any]
DOC = ROOT / "docs" / "testing.md"
PROJECT = ROOT / "tests" / "django_project"

__all__ = ["brooq_conn"]  # the plugin's fixture, used here on `db`


@pytest.fixture
def brooq_dsn(db: str) -> str:
    """The plugin's brooq_conn on this test's own database (conftest.py's db)."""
    return db


def make_worker() -> brooq.Worker:
    """A worker to register handlers on: drain never connects with its DSN."""
    return brooq.Worker("postgresql:///unused", lease=timedelta(seconds=30))


# --- drain ----------------------------------------------------------------------------


def test_a_handler_that_fails_once_is_retried_after_its_backoff_then_done(brooq_conn: Conn) -> None:
    worker = make_worker()
    calls: list[int] = []

    @worker.handler("t.flaky", max_attempts=3, backoff_base=timedelta(minutes=5),
                    backoff_max=timedelta(minutes=10))
    def flaky(job: brooq.Job) -> dict[str, int]:
        calls.append(job.attempt)
        if job.attempt == 1:
            raise ConnectionError("the gateway is down")
        return {"attempt": job.attempt}

    declare_topics(brooq_conn, worker)
    job = brooq.enqueue(brooq_conn, "t.flaky", {"order": 1})

    first = drain(brooq_conn, worker)  # the retry waits out its backoff: not ready
    assert (first.failed, first.done, first.left) == (1, 0, {"t.flaky": 1})
    fate = brooq.get_job(brooq_conn, job.id)
    assert fate is not None and fate.state == "failed"
    assert fate.last_error == "ConnectionError: the gateway is down"
    assert fate.available_at > datetime.now(timezone.utc) + timedelta(minutes=2)  # 2.5 to 5 min

    again = drain(brooq_conn, worker, scheduled=True)  # brooq's clock moves to the retry
    assert (again.done, again.failed, again.left) == (1, 0, {"t.flaky": 0})
    assert [(a.attempt, a.outcome, a.state) for a in again.attempts] == [(2, "done", "done")]
    fate = brooq.get_job(brooq_conn, job.id)
    assert fate is not None and (fate.state, fate.attempts, fate.result) == ("done", 2, {"attempt": 2})
    assert calls == [1, 2]
    # the clock is the wall clock again
    now = brooq_conn.execute("select brooq._now()").fetchone()
    assert now is not None and abs(now[0] - datetime.now(timezone.utc)) < timedelta(seconds=30)


def test_a_job_failing_every_attempt_goes_dead(brooq_conn: Conn, caplog: pytest.LogCaptureFixture) -> None:
    worker = make_worker()

    @worker.handler("t.broken", max_attempts=2, backoff_base=timedelta(seconds=1))
    def broken(job: brooq.Job) -> None:
        raise ValueError(f"order {job.payload['order']} is broken")

    declare_topics(brooq_conn, worker)
    job = brooq.enqueue(brooq_conn, "t.broken", {"order": 7})
    drained = drain(brooq_conn, worker, scheduled=True)
    assert (drained.failed, drained.dead, drained.done) == (1, 1, 0)
    assert [a.state for a in drained.attempts] == ["failed", "dead"]
    fate = brooq.get_job(brooq_conn, job.id)
    assert fate is not None and (fate.state, fate.attempts) == ("dead", 2)
    assert "order 7 is broken" in caplog.text  # logged as the worker logs it


def test_drain_runs_what_handlers_chain_and_enqueue_and_a_workflows_child(brooq_conn: Conn) -> None:
    worker = make_worker()
    seen: list[tuple[str, Any]] = []

    @worker.handler("t.order")
    def order(job: brooq.Job) -> None:
        seen.append(("order", job.payload))
        job.chain("t.receipt", {"order": job.payload["order"]})  # enqueued with the settle
        brooq.enqueue(brooq_conn, "t.audit", {"order": job.payload["order"]})  # on the test's connection

    @worker.handler("t.receipt")
    def receipt(job: brooq.Job) -> None:
        seen.append(("receipt", job.payload))

    @worker.handler("t.audit")
    def audit(job: brooq.Job) -> None:
        seen.append(("audit", [p.state for p in job.parents] or job.payload))

    declare_topics(brooq_conn, worker)
    first = brooq.enqueue(brooq_conn, "t.order", {"order": 1})
    child = brooq.enqueue(brooq_conn, "t.audit", {"after": "order 1"}, after=[first.id])
    assert_enqueued(brooq_conn, "t.audit", after=[first], states=["waiting"])

    drained = drain(brooq_conn, worker)
    assert drained.done == 4 and drained.left == {"t.order": 0, "t.receipt": 0, "t.audit": 0}
    assert sorted(seen, key=str) == sorted([("order", {"order": 1}), ("receipt", {"order": 1}),
                                            ("audit", {"order": 1}), ("audit", ["done"])], key=str)
    fate = brooq.get_job(brooq_conn, child.id)
    assert fate is not None and fate.state == "done"
    receipt_job = assert_enqueued(brooq_conn, "t.receipt", {"order": 1}, states=["done"])
    assert receipt_job.state == "done"

    only = drain(brooq_conn, worker, "t.receipt")  # one topic: nothing left there
    assert only.attempts == () and set(only.topics) == {"t.receipt"}


def test_jobs_scheduled_for_later_run_only_when_asked(brooq_conn: Conn) -> None:
    worker = make_worker()
    ran: list[int] = []
    worker.handler("t.later")(lambda job: ran.append(job.payload["n"]))
    declare_topics(brooq_conn, worker)
    brooq.enqueue(brooq_conn, "t.later", {"n": 2}, delay=timedelta(days=2))
    brooq.enqueue(brooq_conn, "t.later", {"n": 1}, delay=timedelta(hours=1))

    assert drain(brooq_conn, worker).attempts == ()
    assert ran == []
    drained = drain(brooq_conn, worker, scheduled=True)
    assert drained.done == 2 and ran == [1, 2]  # in the order they become ready


def test_drain_stops_at_max_jobs_and_gives_the_next_job_back(brooq_conn: Conn) -> None:
    worker = make_worker()

    @worker.handler("t.forever")
    def again(job: brooq.Job) -> None:
        job.chain("t.forever", {"n": job.payload["n"] + 1})

    declare_topics(brooq_conn, worker)
    brooq.enqueue(brooq_conn, "t.forever", {"n": 1})
    with pytest.raises(DrainLimit, match=r"drain ran max_jobs=5 attempts and jobs of t\.forever are "
                                         r"still ready \(job \d+ of t\.forever was next\)") as caught:
        drain(brooq_conn, worker, max_jobs=5)
    assert caught.value.drained.done == 5
    assert "5 attempts (t.forever: 5 done); not finished: t.forever 1" in str(caught.value)
    (last,) = brooq.list_jobs(brooq_conn, topic="t.forever", states=["failed"])  # ready again
    assert (last.payload, last.attempts) == ({"n": 6}, 0)  # given back, its attempt too


def test_a_failing_handlers_writes_are_rolled_back_and_the_transaction_lives_on(
        brooq_conn: Conn) -> None:
    brooq_conn.execute("create table t_sent (n int)")
    worker = make_worker()

    @worker.handler("t.half", max_attempts=1)
    def half(job: brooq.Job) -> None:
        brooq_conn.execute("insert into t_sent values (%s)", [job.payload["n"]])
        if job.payload["n"] == 2:
            brooq_conn.execute("select 1 / 0")  # an SQL error in the handler, on the test's connection

    declare_topics(brooq_conn, worker)
    brooq.enqueue_many(brooq_conn, "t.half", [{"n": 1}, {"n": 2}])
    drained = drain(brooq_conn, worker)
    assert (drained.done, drained.dead) == (1, 1)
    assert "DivisionByZero: division by zero" in (drained.attempts[1].error or "")
    assert brooq_conn.execute("select n from t_sent").fetchall() == [(1,)]


def test_a_result_the_database_refuses_fails_the_attempt_in_the_tests_transaction(
        brooq_conn: Conn) -> None:
    """settle_many refuses the result (above max_payload_bytes): the settler's fallback
    settles the attempt failed, each statement in a savepoint of the test's transaction."""
    worker = make_worker()
    worker.handler("t.big", max_attempts=1, max_payload_bytes=100)(lambda job: {"x": "a" * 500})
    declare_topics(brooq_conn, worker)
    job = brooq.enqueue(brooq_conn, "t.big", {})
    drained = drain(brooq_conn, worker)
    ((outcome, state, error),) = [(a.outcome, a.state, a.error) for a in drained.attempts]
    assert (outcome, state) == ("failed", "dead") and (error or "").startswith("cannot settle done: ")
    fate = brooq.get_job(brooq_conn, job.id)
    assert fate is not None and fate.state == "dead"


def test_a_timeout_passed_by_a_sync_handler_fails_its_attempt(brooq_conn: Conn) -> None:
    import time

    worker = make_worker()
    worker.handler("t.slow", timeout=timedelta(milliseconds=50))(lambda job: time.sleep(0.1))
    declare_topics(brooq_conn, worker)
    brooq.enqueue(brooq_conn, "t.slow", {})
    drained = drain(brooq_conn, worker)
    assert [(a.outcome, a.error) for a in drained.attempts] == [("failed", "timed out after 50ms")]


def test_async_handlers_and_a_mapping_of_handlers(brooq_conn: Conn) -> None:
    async def double(job: brooq.Job) -> dict[str, int]:
        return {"n": job.payload["n"] * 2}

    brooq.declare_topic(brooq_conn, "t.async")
    job = brooq.enqueue(brooq_conn, "t.async", {"n": 21})
    assert drain(brooq_conn, {"t.async": double}).done == 1
    fate = brooq.get_job(brooq_conn, job.id)
    assert fate is not None and fate.result == {"n": 42}


@dataclass
class Invoice:  # a typed payload (at module level: the handler's annotation is a string)
    order: int


def test_a_task_and_a_registry_drain_as_a_worker_registers_them(brooq_conn: Conn) -> None:
    @brooq.task("t.invoice", max_attempts=2)
    def invoice(job: brooq.Job, payload: Invoice) -> dict[str, int]:
        return {"invoiced": payload.order}

    registry = brooq.Registry(invoice)
    registry.topic("t.other_service")  # a topic without a task here: declared, not drained
    assert declare_topics(brooq_conn, registry) == ["t.invoice", "t.other_service"]
    job = invoice.enqueue(brooq_conn, Invoice(order=5))
    assert_enqueued(brooq_conn, "t.invoice", Invoice(order=5))
    drained = drain(brooq_conn, invoice)
    assert drained.done == 1 and set(drained.topics) == {"t.invoice"}
    assert brooq.retry(brooq_conn, job.id) is False  # done is never re-driven
    second = invoice.enqueue(brooq_conn, Invoice(order=6))
    drained = drain(brooq_conn, registry)
    assert drained.done == 1 and set(drained.topics) == {"t.invoice"}
    for made, order in ((job, 5), (second, 6)):
        fate = brooq.get_job(brooq_conn, made.id)
        assert fate is not None and (fate.state, fate.result, fate.max_attempts) == (
            "done", {"invoiced": order}, 2)


def test_drain_names_what_is_wrong(brooq_conn: Conn) -> None:
    worker = make_worker()
    worker.handler("t.never_declared")(lambda job: None)
    with pytest.raises(ValueError, match="no handler for topic 'nope'; the handlers' topics: t.never_declared"):
        drain(brooq_conn, worker, "nope")
    with pytest.raises(ValueError, match="max_jobs: a positive integer, not 0"):
        drain(brooq_conn, worker, max_jobs=0)
    with pytest.raises(TypeError, match="a brooq.Worker, a brooq.Task, a brooq.Registry or a mapping "
                                        "of topic name to handler function, not list"):
        drain(brooq_conn, [worker])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="drain takes a psycopg.Connection .the test's., not str"):
        drain("postgresql://", worker)  # type: ignore[arg-type]
    with pytest.raises(brooq.UnknownTopic, match=r"t\.never_declared.*declare the topics first, in "
                                                 r"the test: brooq.testing.declare_topics\(conn, worker\)"):
        drain(brooq_conn, worker)


def test_scheduled_needs_a_superuser(db: str) -> None:
    role = f"brooq_t_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(db, autocommit=True) as admin:
        admin.execute(f"create role {role} login; grant brooq_admin to {role}")
    try:
        info = psycopg.conninfo.conninfo_to_dict(db)
        with psycopg.connect(psycopg.conninfo.make_conninfo(db, user=role)) as conn:
            assert info.get("user") != role
            with pytest.raises(brooq.BrooqError, match=f"only a superuser's session may do, and role "
                                                       f"'{role}' is not one"):
                drain(conn, {"t.x": lambda job: None}, scheduled=True)
    finally:
        with psycopg.connect(db, autocommit=True) as admin:
            admin.execute(f"drop owned by {role}; drop role {role}")


# --- assert_enqueued, refute_enqueued ---------------------------------------------------


def test_assert_enqueued_shows_what_was_enqueued_instead(brooq_conn: Conn) -> None:
    brooq.declare_topic(brooq_conn, "t.mail")
    brooq.declare_topic(brooq_conn, "t.sms")
    for n in range(12):
        brooq.enqueue(brooq_conn, "t.mail", {"order": n, "to": {"name": f"n{n}", "lang": "fr"}},
                      key=f"order-{n}", priority=n % 2)
    brooq.enqueue(brooq_conn, "t.sms", {"order": 99})

    found = assert_enqueued(brooq_conn, "t.mail", {"to": {"name": "n3"}}, key="order-3", priority=1)
    assert found.payload["order"] == 3
    assert assert_enqueued(brooq_conn, "t.mail", {"to": {"lang": "fr"}}, count=12).payload["order"] == 11

    with pytest.raises(AssertionError) as caught:
        assert_enqueued(brooq_conn, "t.mail", {"order": 99})
    message = str(caught.value)
    assert message.startswith(
        "assert_enqueued: no job of topic 't.mail' (pending, failed or waiting) with payload "
        "containing {\"order\":99}\nenqueued on 't.mail', newest first:\n  job ")
    # as jsonb stores it: shorter keys first
    assert 'pending payload={"to":{"lang":"fr","name":"n11"},"order":11} key=\'order-11\' priority=1' in message
    assert message.count("\n  job ") == 10 and message.endswith("\n  ... and 2 more")

    with pytest.raises(AssertionError, match=r"^assert_enqueued: 6 jobs of topic 't.mail' \(pending\) "
                                             r"with priority 0, not 3\n"):
        assert_enqueued(brooq_conn, "t.mail", priority=0, states=["pending"], count=3)

    with pytest.raises(AssertionError) as caught:
        assert_enqueued(brooq_conn, "t.email", {"order": 1})
    assert str(caught.value) == (
        "assert_enqueued: no job of topic 't.email' (pending, failed or waiting) with payload "
        "containing {\"order\":1}\nno job of 't.email' is; jobs of other topics are: 't.mail' (12), "
        "'t.sms' (1)")

    refute_enqueued(brooq_conn, "t.mail", {"order": 12})
    with pytest.raises(AssertionError) as caught:
        refute_enqueued(brooq_conn, "t.sms")
    assert re.fullmatch(r"refute_enqueued: 1 jobs of topic 't.sms' \(pending, failed or waiting\) "
                        r"at all, newest first:\n  job \d+ pending payload=\{\"order\":99\}",
                        str(caught.value)), str(caught.value)
    with pytest.raises(ValueError, match="states: a list of job states"):
        assert_enqueued(brooq_conn, "t.mail", states="pending")


# --- the plugin, in a pytest of its own -------------------------------------------------

ISOLATION = '''
import brooq
from brooq.testing import assert_enqueued, refute_enqueued

def test_a_enqueues(brooq_conn):
    brooq.declare_topic(brooq_conn, "email")
    brooq.enqueue(brooq_conn, "email", {"order": 1})
    assert_enqueued(brooq_conn, "email", {"order": 1})

def test_b_sees_nothing_of_it(brooq_conn, brooq_dsn):
    assert brooq_conn.execute("select count(*) from brooq.jobs").fetchone() == (0,)
    assert brooq_conn.execute("select count(*) from brooq.topics").fetchone() == (0,)
    with brooq_conn.cursor() as cur:
        assert cur.execute("select current_database()").fetchone()[0].startswith("brooq_test_")

def test_c_a_commit_is_refused(brooq_conn):
    import psycopg, pytest
    with pytest.raises(psycopg.ProgrammingError, match="commit"):
        brooq_conn.commit()
'''


def databases(server: Server) -> set[str]:
    with psycopg.connect(server.admin_dsn, autocommit=True) as conn:
        return {name for (name,) in conn.execute("select datname from pg_database")}


def test_the_plugin_rolls_each_tests_work_back_on_a_database_of_its_own(
        pytester: pytest.Pytester, server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BROOQ_TEST_DSN", server.admin_dsn)
    before = databases(server)
    pytester.makepyfile(test_isolation=ISOLATION)
    result = pytester.runpytest_subprocess("-p", "brooq.testing", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)
    assert databases(server) == before  # its database dropped, no other touched


def test_the_plugin_starts_a_throwaway_cluster_without_brooq_test_dsn(
        pytester: pytest.Pytester, server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    if server.cluster is None:
        pytest.skip("the throwaway cluster needs the local PostgreSQL binaries of our own cluster")
    monkeypatch.delenv("BROOQ_TEST_DSN", raising=False)
    pytester.makepyfile(test_isolation=ISOLATION)
    result = pytester.runpytest_subprocess("-p", "brooq.testing", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)


def test_loading_the_plugin_starts_nothing_a_test_does_not_ask_for(pytester: pytest.Pytester,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BROOQ_TEST_DSN", "postgresql://nobody@127.0.0.1:1/none")
    pytester.makepyfile(test_plain="def test_plain():\n    assert True\n")
    result = pytester.runpytest_subprocess("-p", "brooq.testing", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_a_server_that_refuses_says_so_once_per_test(pytester: pytest.Pytester,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BROOQ_TEST_DSN", "postgresql://nobody@127.0.0.1:1/none")
    pytester.makepyfile(test_db="def test_db(brooq_conn):\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "brooq.testing", "-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*brooq.testing: cannot create a test database on the server of "
                                 "BROOQ_TEST_DSN (127.0.0.1:1/none)*"])


# --- docs/testing.md ------------------------------------------------------------------


def doc_files(section: str) -> dict[str, str]:
    """The ```python blocks of a section of docs/testing.md that open with `# <path>`."""
    text = DOC.read_text()
    start = text.index(section)
    end = text.find("\n## ", start + 1)
    part = text[start:end if end != -1 else len(text)]
    return {path: code for path, code in re.findall(r"^```python\n# (\S+)\n(.*?)^```", part,
                                                    flags=re.MULTILINE | re.DOTALL)}


def test_the_docs_pytest_example_passes_under_the_plugin(
        pytester: pytest.Pytester, server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    files = doc_files("## With pytest")
    assert set(files) == {"conftest.py", "shop.py", "test_shop.py"}
    for path, code in files.items():
        pytester.path.joinpath(path).write_text(code)
    monkeypatch.setenv("BROOQ_TEST_DSN", server.admin_dsn)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-W", "error::pytest.PytestWarning")
    result.assert_outcomes(passed=len(re.findall(r"^def test_", files["test_shop.py"], re.MULTILINE)))


def test_the_docs_django_example_is_the_projects_and_passes(server: Server, tmp_path: Path) -> None:
    files = doc_files("## With Django")
    assert set(files) == {"shop/tests.py"}
    for path, code in files.items():
        assert code in (PROJECT / path).read_text(), f"docs/testing.md: {path} is not the project's"
    info = psycopg.conninfo.conninfo_to_dict(server.admin_dsn)
    name = f"brooq_dj_{uuid.uuid4().hex[:8]}"  # Django tests on test_<name>, created and dropped
    env = {k: v for k, v in os.environ.items() if not k.startswith("BROOQ_")} | {
        "APP_DB_NAME": name, "APP_DB_USER": str(info.get("user", "postgres")),
        "APP_DB_HOST": str(info.get("host", "127.0.0.1")), "APP_DB_PORT": str(info.get("port", 5432)),
        "DJANGO_SETTINGS_MODULE": "mysite.settings"}
    done = subprocess.run([sys.executable, "manage.py", "test", "shop", "--noinput", "-v", "2"],
                          cwd=PROJECT, env=env, capture_output=True, text=True, timeout=240, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    ran = re.search(r"^Ran (\d+) tests? in", done.stderr, re.MULTILINE)
    assert ran and int(ran.group(1)) == files["shop/tests.py"].count("    def test_"), done.stderr
    assert f"test_{name}" not in databases(server)
