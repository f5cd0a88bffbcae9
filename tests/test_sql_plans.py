"""claim, heartbeat and settle_many keep probing indexes whatever the statistics said
when their plans were made (docs/performance.md, "Generic plans").

claim runs on a generic plan, made once per session. A worker that starts on an empty
table (just deployed, or truncated and analyzed, as the bench's latency scenario does)
kept a plan that read all of brooq.job to join the claimed rows back (a seq scan and a
hash join), and as the table grew every claim read every row until autovacuum
analyzed it again: at 2,000 jobs/s the bench measured p50 2.2 ms, against 0.9 ms with
the plan that probes job_pkey. heartbeat and settle_many had the same trap, one scan of
the table per call (a settle of 5 jobs: 9.9 ms with 100,000 rows, 0.65 ms probing).

Its statements are never compiled with JIT either: a generic plan's estimates for a
claim from several topics passed jit_above_cost on a large table, and PostgreSQL
compiled the statement at every call (44-82 ms against 0.76 ms).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg
import pytest


def seq_scans_of_job(conn: psycopg.Connection[Any]) -> int:
    """Sequential scans of brooq.job in the current transaction."""
    row = conn.execute("select pg_stat_get_xact_numscans('brooq.job'::regclass)").fetchone()
    assert row is not None
    return int(row[0])


def planned_on_an_empty_table(conn: psycopg.Connection[Any], calls: Callable[[int], None]) -> None:
    """Make this session's generic plans with ``calls(3)`` while brooq.job's statistics
    say it is empty, then grow it to 20,000 rows, not analyzed (no autovacuum this fast)."""
    conn.execute("vacuum analyze brooq.job")
    conn.execute("select count(*) from brooq.enqueue_many('t', array_fill('{}'::jsonb, array[3]))")
    calls(3)
    for _ in range(2):
        conn.execute("select count(*) from brooq.enqueue_many('t', array_fill('{}'::jsonb, array[10000]))")


def test_a_claim_planned_on_an_empty_table_still_probes_indexes_once_it_has_grown(db: str) -> None:
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute("select brooq.declare_topic('t')")

        def claim(n: int) -> None:
            """A claim of n jobs in this session (its plan), settled."""
            rows = conn.execute("select id, lease_token from brooq.claim('w', array['t'], %s, '30s')",
                                [n]).fetchall()
            assert len(rows) == n
            conn.execute("select count(*) from brooq.settle_many('w', %s, %s, %s)",
                         [[r[0] for r in rows], [r[1] for r in rows], ["done"] * n])

        planned_on_an_empty_table(conn, claim)
        with conn.transaction():
            before = seq_scans_of_job(conn)
            conn.execute("select count(*) from brooq.claim('w', array['t'], 100, '30s')")
            assert seq_scans_of_job(conn) == before, "claim scanned all of brooq.job"


@pytest.mark.parametrize("retain_done", [True, False])
def test_heartbeat_and_settle_many_planned_on_an_empty_table_still_probe_indexes_once_it_has_grown(
        db: str, retain_done: bool) -> None:
    """retain_done => false takes settle_many's other statement (delete, then update)."""
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute("select brooq.declare_topic('t', retain_done => %s)", [retain_done])

        def claim_renew_settle(n: int) -> None:
            rows = conn.execute("select id, lease_token from brooq.claim('w', array['t'], %s, '30s')",
                                [n]).fetchall()
            ids, tokens = [r[0] for r in rows], [r[1] for r in rows]
            renewed = conn.execute("select count(*) from brooq.heartbeat('w', %s, '30s', %s)",
                                   [ids, tokens]).fetchone()
            settled = conn.execute("select count(*) from brooq.settle_many('w', %s, %s, %s)",
                                   [ids, tokens, ["done"] * n]).fetchone()
            assert len(rows) == n and renewed == (n,) and settled == (n,)

        planned_on_an_empty_table(conn, claim_renew_settle)
        with conn.transaction():
            before = seq_scans_of_job(conn)
            claim_renew_settle(5)
            assert seq_scans_of_job(conn) == before, "heartbeat or settle_many scanned all of brooq.job"


def jit_compiled(conn: psycopg.Connection[Any], call: str, params: list[Any]) -> list[str]:
    """The statements run by ``call`` (itself included) whose plan JIT compiled: the first
    line of each one's text, as auto_explain logs it."""
    notes: list[str] = []

    def note(diag: psycopg.errors.Diagnostic) -> None:
        notes.append(diag.message_primary or "")

    conn.add_notice_handler(note)
    conn.execute(call, params)
    conn.remove_notice_handler(note)
    return [n.split("Query Text: ", 1)[1].strip().split("\n")[0] for n in notes
            if "JIT:" in n and "Query Text: " in n]


def test_a_claim_is_never_jit_compiled(db: str) -> None:
    """claim's generic plan for several topics was estimated above jit_above_cost on a
    large table (284,262 against 100,000), and PostgreSQL compiled it with JIT at
    every call: 44-82 ms a claim. Here every plan passes the threshold (0)."""
    with psycopg.connect(db, autocommit=True) as conn:
        if not conn.execute("select pg_jit_available()").fetchone()[0]:  # type: ignore[index]
            pytest.skip("this PostgreSQL has no JIT (llvmjit) to refuse")
        for setting in ("jit = on", "jit_above_cost = 0", "auto_explain.log_min_duration = 0",
                        "auto_explain.log_nested_statements = on", "auto_explain.log_level = notice"):
            conn.execute(f"set {setting}")
        conn.execute("load 'auto_explain'")
        for topic in ("a", "b"):
            conn.execute("select brooq.declare_topic(%s)", [topic])
            conn.execute("select count(*) from brooq.enqueue_many(%s, array_fill('{}'::jsonb, array[5]))", [topic])
        claim = "select count(*) from brooq.claim('w', %s, 3, '30s')"
        for topics in (["a"], ["a", "b"]):
            compiled = jit_compiled(conn, claim, [topics])
            outer = claim.replace("%s", "$1")  # the session's own statement: JIT on
            assert outer in compiled, "JIT is off in this session: the test proves nothing"
            assert [c for c in compiled if c != outer] == [], topics


def test_a_workers_gauges_count_only_its_own_topics_jobs(db: str) -> None:
    """A worker's depth gauges (Metrics.refresh_stats, every stats_interval) read the
    ready jobs of its topics, not those of every topic of the database."""
    from brooq.counters import Counters
    from brooq.metrics import Metrics

    with psycopg.connect(db, autocommit=True) as conn:
        for topic, jobs in (("mine", 5), ("mine.too", 3), ("theirs", 10000), ("theirs", 10000)):
            conn.execute("select brooq.declare_topic(%s)", [topic])
            conn.execute("select count(*) from brooq.enqueue_many(%s, array_fill('{}'::jsonb, array[%s]))",
                         [topic, jobs])
        conn.execute("vacuum analyze brooq.job")
        conn.execute("set max_parallel_workers_per_gather = 0")  # parallel workers count apart
        metrics = Metrics(Counters())
        with conn.transaction():
            metrics.refresh_stats(conn, ["mine", "mine.too"])
            row = conn.execute("select pg_stat_get_xact_tuples_returned('brooq.job_ready_idx'::regclass)"
                               ).fetchone()
        assert metrics.jobs.labels("mine", "pending")._value.get() == 5
        assert metrics.jobs.labels("mine.too", "pending")._value.get() == 3
        # exactly the 8 entries of its topics (counting every topic read the 20,000 others',
        # or the whole table)
        assert row is not None and row[0] == 5 + 3, f"{row[0]} entries of job_ready_idx read for 8 jobs"
