"""claim keeps probing indexes whatever the statistics said when its plan was made
(docs/performance.md, "Generic plans").

claim runs on a generic plan, made once per session. A worker that starts on an empty
table (just deployed, or truncated and analyzed, as the bench's latency scenario does)
kept a plan that read all of brooq.job to join the claimed rows back (a seq scan and a
hash join), and as the table grew every claim read every row until autovacuum
analyzed it again: at 2,000 jobs/s the bench measured p50 2.2 ms, against 0.9 ms with
the plan that probes job_pkey.
"""

from __future__ import annotations

from typing import Any

import psycopg


def seq_scans_of_job(conn: psycopg.Connection[Any]) -> int:
    """Sequential scans of brooq.job in the current transaction."""
    row = conn.execute("select pg_stat_get_xact_numscans('brooq.job'::regclass)").fetchone()
    assert row is not None
    return int(row[0])


def test_a_claim_planned_on_an_empty_table_still_probes_indexes_once_it_has_grown(db: str) -> None:
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute("select brooq.declare_topic('t')")
        conn.execute("vacuum analyze brooq.job")  # the statistics say: empty

        def claim(n: int) -> None:
            """A claim of n jobs in this session (its plan), settled."""
            rows = conn.execute("select id, lease_token from brooq.claim('w', array['t'], %s, '30s')",
                                [n]).fetchall()
            assert len(rows) == n
            conn.execute("select count(*) from brooq.settle_many('w', %s, %s, %s)",
                         [[r[0] for r in rows], [r[1] for r in rows], ["done"] * n])

        conn.execute("select count(*) from brooq.enqueue_many('t', array_fill('{}'::jsonb, array[3]))")
        claim(3)  # the generic plan is made now, on the empty table's statistics
        for _ in range(2):  # 20,000 rows, not analyzed (no autovacuum this fast)
            conn.execute("select count(*) from brooq.enqueue_many('t', array_fill('{}'::jsonb, array[10000]))")
        with conn.transaction():
            before = seq_scans_of_job(conn)
            conn.execute("select count(*) from brooq.claim('w', array['t'], 100, '30s')")
            assert seq_scans_of_job(conn) == before, "claim scanned all of brooq.job"
