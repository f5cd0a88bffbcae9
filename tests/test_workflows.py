"""Workflows from Python (docs/architecture.md, "Workflows"): enqueue(..., after=...)
in the sync and async helpers, a child waiting until its parent is done, its parents'
results in one query, an unknown parent mapped to InvalidArgument, topic_stats.waiting.
The SQL rules are in tests/pgtap/workflows.sql, the races in test_workflow_races.py."""

from __future__ import annotations

import asyncio
import json
import subprocess

import brooq
import psycopg
import pytest
from brooq import aio
from helpers import COMMAND, FAST, declare, running, wait_for


def test_a_child_waits_for_its_parent_then_reads_its_result(db: str) -> None:
    with psycopg.connect(db, autocommit=True) as conn:
        declare(conn, "wf.step")
        parent = brooq.enqueue(conn, "wf.step", {"n": 1})
        child = brooq.enqueue(conn, "wf.step", {"n": 2}, after=[parent.id])
        (stats,) = [s for s in brooq.topic_stats(conn) if s.topic == "wf.step"]
        assert (stats.pending, stats.waiting) == (1, 1)
        assert brooq.get_job(conn, child.id).state == "waiting"
        (claimed,) = conn.execute("select id, lease_token from brooq.claim('w', array['wf.step'], 10)").fetchall()
        assert claimed[0] == parent.id  # the child is never claimed while it waits
        conn.execute("select brooq.settle(%s, 'w', %s, 'done', result => '{\"r\": 1}')", claimed)
        assert brooq.get_job(conn, child.id).state == "pending"
        assert [(p.id, p.state, p.result) for p in brooq.parents(conn, child.id)] == [
            (parent.id, "done", {"r": 1})]  # one query for every parent
        assert brooq.parents(conn, parent.id) == []
        with pytest.raises(brooq.InvalidArgument) as bad:
            brooq.enqueue(conn, "wf.step", {}, after=[2**40])
        assert bad.value.sqlstate == "23503" and f"parent job {2**40} does not exist" in str(bad.value)


def test_the_async_helper_takes_after_and_after_policy(db: str) -> None:
    async def run() -> tuple[str, str]:
        async with await psycopg.AsyncConnection.connect(db, autocommit=True) as conn:
            await conn.execute("select brooq.declare_topic('wf.async')")
            parent = await aio.enqueue(conn, "wf.async", {})
            child = await aio.enqueue(conn, "wf.async", {}, after=[parent.id], after_policy="run")
            await conn.execute("select brooq.cancel(%s)", (parent.id,))
            assert [(p.id, p.state) for p in await aio.parents(conn, child.id)] == [(parent.id, "canceled")]
            cur = await conn.execute("select state, after_policy from brooq.job where id = %s", (child.id,))
            row = await cur.fetchone()
            assert row is not None
            return row[0], row[1]

    assert asyncio.run(run()) == ("pending", "run")  # under run, a canceled parent counts as finished


def test_brooq_job_shows_the_parents_a_job_waits_for(db: str) -> None:
    with psycopg.connect(db, autocommit=True) as conn:
        declare(conn, "wf.cli")
        first, second = brooq.enqueue_many(conn, "wf.cli", [{}, {}])
        child = brooq.enqueue(conn, "wf.cli", {}, after=[first.id, second.id])
        brooq.cancel(conn, second.id)
    line = cli(db, "job", str(child.id))
    assert f" parents={first.id}:pending,{second.id}:canceled" in line and "state=canceled" in line, line
    shown = json.loads(cli(db, "job", str(child.id), "--json"))
    assert [(p["id"], p["state"]) for p in shown["parents"]] == [(first.id, "pending"), (second.id, "canceled")]
    assert json.loads(cli(db, "job", str(first.id), "--json"))["parents"] == []
    assert "parents=" not in cli(db, "job", str(first.id))


def cli(db: str, *args: str) -> str:
    done = subprocess.run([*COMMAND, *args, "--dsn", db], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_handler_reads_its_parents_from_the_claim_and_brooq_job_shows_children(db: str) -> None:
    """Job.parents comes with the claim (no connection of the handler's own): each
    parent's id, topic and state; their results and errors on request (brooq.parents).
    The parent's children, with their states, in brooq.children and `brooq job`."""
    seen: dict[int, tuple[tuple[int, str, str], ...]] = {}
    results: dict[int, list[tuple[int, object, str | None]]] = {}
    worker = brooq.Worker(db, **FAST)

    @worker.handler("wf.read")
    def read(job: brooq.Job) -> dict[str, int]:
        seen[job.id] = tuple((p.id, p.topic, p.state) for p in job.parents)
        if job.parents:
            with psycopg.connect(db) as mine:
                results[job.id] = [(p.id, p.result, p.last_error) for p in brooq.parents(mine, job.id)]
        if job.payload.get("fail"):
            raise brooq.Dead("boom")
        return {"n": job.payload["n"]}

    with psycopg.connect(db, autocommit=True) as conn:
        declare(conn, "wf.read")
        one, two = brooq.enqueue_many(conn, "wf.read", [{"n": 1}, {"n": 2, "fail": True}])
        child = brooq.enqueue(conn, "wf.read", {"n": 3}, after=[two.id, one.id], after_policy="run")
        assert [(c.id, c.state, c.parents_left) for c in brooq.children(conn, one.id)] == [
            (child.id, "waiting", 2)]
        with running(worker):
            wait_for(lambda: brooq.get_job(conn, child.id).state == "done",  # type: ignore[union-attr]
                     what="the child")
        assert seen[one.id] == () and seen[two.id] == ()  # no parents: an empty tuple
        assert seen[child.id] == ((one.id, "wf.read", "done"), (two.id, "wf.read", "dead"))
        assert results[child.id] == [(one.id, {"n": 1}, None), (two.id, None, "Dead: boom")]
        assert [(c.id, c.state, c.parents_left) for c in brooq.children(conn, two.id)] == [
            (child.id, "done", 0)]
        with pytest.raises(brooq.InvalidArgument):
            brooq.children(conn, one.id, limit=0)
    assert f" children={child.id}:done" in cli(db, "job", str(one.id))
    shown = json.loads(cli(db, "job", str(one.id), "--json"))
    assert [(c["id"], c["state"]) for c in shown["children"]] == [(child.id, "done")]


def test_a_parent_result_python_cannot_decode_reaches_no_claim(db: str) -> None:
    """A parent's result too deep for Python's json is never in the claim: the child
    runs like any other; brooq.parents reads that result as a brooq.Undecodable."""
    ran: list[int] = []
    worker = brooq.Worker(db, **FAST)

    @worker.handler("wf.deep")
    def handle(job: brooq.Job) -> None:
        ran.append(job.id)

    with psycopg.connect(db, autocommit=True) as conn:
        declare(conn, "wf.deep")
        (parent,) = conn.execute("select id from brooq.enqueue('wf.deep', '{}')").fetchone() or ()
        (token,) = conn.execute("select lease_token from brooq.claim('setup', array['wf.deep'])").fetchone() or ()
        deep = "[" * 5000 + "]" * 5000
        conn.execute("select brooq.settle(%s, 'setup', %s, 'done', result => %s::jsonb)", (parent, token, deep))
        child = brooq.enqueue(conn, "wf.deep", {}, after=[parent])
        with running(worker):
            wait_for(lambda: brooq.get_job(conn, child.id).state == "done",  # type: ignore[union-attr]
                     what="the child")
        (read,) = brooq.parents(conn, child.id)
        assert isinstance(read.result, brooq.Undecodable) and "RecursionError" in read.result.cause
    assert ran == [child.id]


def test_a_re_drive_re_arms_the_canceled_children_only_when_asked(db: str) -> None:
    """brooq.retry(..., rearm_children=True) and `brooq retry --rearm-children`: the
    child that a dead parent canceled waits for it again; by default it stays canceled."""
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute("select brooq.declare_topic('wf.redo', max_attempts => 1)")
        parent = brooq.enqueue(conn, "wf.redo", {})
        child = brooq.enqueue(conn, "wf.redo", {}, after=[parent.id])

        def kill() -> None:
            (token,) = conn.execute("select lease_token from brooq.claim('w', array['wf.redo'])").fetchone() or ()
            conn.execute("select brooq.settle(%s, 'w', %s, 'dead', error => 'bad')", (parent.id, token))

        def state() -> str:
            return brooq.get_job(conn, child.id).state  # type: ignore[union-attr]

        kill()
        assert state() == "canceled"
        assert brooq.retry(conn, parent.id) is True
        assert state() == "canceled"  # the default: the child stays as the parent's end left it
        kill()
        assert brooq.retry(conn, parent.id, rearm_children=True) is True
        assert state() == "waiting"
        assert [(c.id, c.state, c.parents_left) for c in brooq.children(conn, parent.id)] == [
            (child.id, "waiting", 1)]
        kill()
        assert state() == "canceled"
        cli(db, "retry", str(parent.id), "--rearm-children")
        assert state() == "waiting"
