"""The operator's SQL and CLI (issue 13): re-drive, health, periodic jobs.

Real PostgreSQL, the real `brooq` command as a subprocess (tests/test_cli.py's helper).
"""

from __future__ import annotations

import psycopg
from test_cli import brooq, declare

Conn = psycopg.Connection[tuple[object, ...]]


def dead_job(conn: Conn, topic: str, error: str = "boom") -> int:
    """A job of `topic` (declared with max_attempts 1) that failed its one attempt."""
    row = conn.execute("select id from brooq.enqueue(%s)", [topic]).fetchone()
    assert row is not None
    job_id = int(row[0])
    claimed = conn.execute("select id, lease_token from brooq.claim('w', array[%s])", [topic]).fetchone()
    assert claimed is not None and claimed[0] == job_id
    state = conn.execute("select brooq.settle(%s, 'w', %s, 'failed', error => %s)",
                         [job_id, claimed[1], error]).fetchone()
    assert state == ("dead",)
    return job_id


# --- re-drive ---------------------------------------------------------------------

def test_retry_re_drives_a_dead_job_and_wakes_the_workers(db: str) -> None:
    with psycopg.connect(db, autocommit=True) as conn, psycopg.connect(db, autocommit=True) as listener:
        conn.execute("select brooq.declare_topic('mail', max_attempts => 1)")
        job_id = dead_job(conn, "mail", "smtp down")
        listener.execute("listen brooq")

        done = brooq("retry", str(job_id), dsn=db)
        assert (done.returncode, done.stdout, done.stderr) == (0, f"re-drove job {job_id}: pending again\n", "")
        wakes = [n for n in listener.notifies(timeout=5, stop_after=1)]
        assert [(n.channel, n.payload) for n in wakes] == [("brooq", "mail")]

        row = conn.execute("select state, attempts, max_attempts, last_error from brooq.job where id = %s",
                           [job_id]).fetchone()
        assert row is not None
        assert row[:3] == ("pending", 1, 2)  # attempts kept, one more attempt allowed
        assert row[3].startswith("re-driven from dead by postgres at ") and row[3].endswith("; before: smtp down")
        claimed = conn.execute("select id, attempt from brooq.claim('w2', array['mail'])").fetchone()
        assert claimed == (job_id, 2)

        again = brooq("retry", str(job_id), dsn=db)  # processing now: fenced, no error
        assert again.returncode == 1
        assert again.stdout == (f"job {job_id} not re-driven: not dead or canceled (pending, failed, "
                                "processing, done), or unknown\n")


def test_retry_dead_re_drives_a_topic_bounded_and_canceled_only_when_asked(db: str) -> None:
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute("select brooq.declare_topic('mail', max_attempts => 1)")
        conn.execute("select brooq.declare_topic('other', max_attempts => 1)")
        dead = [dead_job(conn, "mail") for _ in range(3)]
        other = dead_job(conn, "other")
        row = conn.execute("select id from brooq.enqueue('mail')").fetchone()
        assert row is not None
        conn.execute("select brooq.cancel(%s)", [row[0]])

        first = brooq("retry", "--dead", "mail", "--max-jobs", "2", dsn=db)
        assert first.returncode == 0, first.stderr
        assert first.stdout == ("re-drove 2 dead jobs of topic mail\n"
                                "stopped at --max-jobs 2: run it again for the rest\n")
        rest = brooq("retry", "--dead", "mail", dsn=db)
        assert rest.stdout == "re-drove 1 dead job of topic mail\n"
        canceled = brooq("retry", "--dead", "mail", "--canceled", dsn=db)
        assert canceled.stdout == "re-drove 1 dead or canceled job of topic mail\n"
        states = dict(conn.execute("select id, state from brooq.job").fetchall())
        assert {states[i] for i in dead} == {"pending"} and states[row[0]] == "pending"
        assert states[other] == "dead"  # another topic is left alone


def test_retry_usage_and_errors(db: str) -> None:
    declare(db, "mail")
    assert brooq("retry", dsn=db).returncode == 2
    assert brooq("retry", "1", "--dead", "mail", dsn=db).returncode == 2
    assert brooq("retry", "1", "--canceled", dsn=db).returncode == 2
    unknown = brooq("retry", "--dead", "nope", dsn=db)
    assert unknown.returncode == 1
    assert 'topic "nope" does not exist [42704 undefined_object]' in unknown.stderr
    assert brooq("retry", "123456", dsn=db).returncode == 1


def test_retry_needs_the_admin_role(db: str) -> None:
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute("select brooq.declare_topic('mail', max_attempts => 1)")
        job_id = dead_job(conn, "mail")
        conn.execute("drop role if exists cockpit_worker")
        conn.execute("create role cockpit_worker login in role brooq_worker")
    try:
        as_worker = psycopg.conninfo.make_conninfo(db, user="cockpit_worker")
        done = brooq("retry", str(job_id), dsn=as_worker)
        assert done.returncode == 1
        assert "brooq_admin" in done.stderr and "42501" in done.stderr
    finally:
        with psycopg.connect(db, autocommit=True) as conn:
            conn.execute("drop role cockpit_worker")
