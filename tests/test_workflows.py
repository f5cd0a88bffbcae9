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
from helpers import COMMAND, declare


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
