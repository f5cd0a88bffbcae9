"""The operator's SQL and CLI: re-drive, health, periodic jobs.

Real PostgreSQL, the real `brooq` command as a subprocess (tests/helpers.py).
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from datetime import datetime

import psycopg
import pytest
from helpers import brooq_cli as brooq
from helpers import declare

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
        conn.execute("drop role if exists health_worker")
        conn.execute("create role health_worker login in role brooq_worker")
    try:
        as_worker = psycopg.conninfo.make_conninfo(db, user="health_worker")
        done = brooq("retry", str(job_id), dsn=as_worker)
        assert done.returncode == 1
        assert "brooq_admin" in done.stderr and "42501" in done.stderr
    finally:
        with psycopg.connect(db, autocommit=True) as conn:
            conn.execute("drop role health_worker")


# --- health -----------------------------------------------------------------------

def health(conn: Conn, at: str | None = None) -> dict[str, tuple[str, str]]:
    """brooq.health() as {name: (status, detail)}; `at` moves brooq's clock (superuser)."""
    if at is not None:
        conn.execute("select set_config('brooq.now', (now() + %s::interval)::text, false)", [at])
    try:
        rows = conn.execute("select name, status, detail from brooq.health()").fetchall()
    finally:
        conn.execute("reset brooq.now")
    return {str(r[0]): (str(r[1]), str(r[2])) for r in rows}


def test_health_of_a_quiet_queue_is_ok_and_the_command_exits_0(db: str) -> None:
    declare(db, "mail")
    with psycopg.connect(db, autocommit=True) as conn:
        checks = health(conn)
    assert list(checks) == ["dead_tuples", "last_vacuum", "xmin_horizon", "expired_leases",
                            "paused_topics", "lost_leases"]
    assert {status for status, _ in checks.values()} == {"ok"}, checks
    done = brooq("health", dsn=db)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[0].split() == ["check", "status", "detail"]
    as_json = brooq("health", "--json", dsn=db)
    assert [c["status"] for c in json.loads(as_json.stdout)] == ["ok"] * 6


def test_health_sees_a_transaction_that_holds_back_vacuum_and_the_dead_tuples_it_keeps(db: str) -> None:
    with psycopg.connect(db, autocommit=True) as conn, psycopg.connect(db) as holder:
        conn.execute("alter table brooq.job set (autovacuum_enabled = off)")  # only vacuum by hand here
        conn.execute("select brooq.declare_topic('mail')")
        holder.execute("set transaction isolation level repeatable read")
        holder.execute("select count(*) from brooq.jobs").fetchone()  # the snapshot is taken: xmin held
        holder_pid = holder.info.backend_pid

        for _ in range(2):
            conn.execute("select count(*) from brooq.enqueue_many('mail', array_fill('{}'::jsonb, array[10000]))")
        conn.execute("delete from brooq.job")  # 20,000 dead row versions (as the owner: a test)
        conn.execute("vacuum brooq.job")  # cannot remove them: the holder might still see them
        conn.execute("select pg_stat_force_next_flush()")
        conn.execute("select 1")

        checks = health(conn)
        status, detail = checks["xmin_horizon"]
        assert status == "ok", detail  # open for a moment only
        assert f"transaction of pid {holder_pid} " in detail and "idle in transaction" in detail
        assert checks["dead_tuples"][0] == "warn", checks["dead_tuples"]  # > 10 x the 1000 of autovacuum
        dead = re.match(r"(\d+) dead and 0 live row versions in brooq.job", checks["dead_tuples"][1])
        assert dead and int(dead.group(1)) >= 20000, checks["dead_tuples"]
        assert checks["last_vacuum"][0] == "ok"  # it ran (by hand, seconds ago): vacuum is not the problem
        assert health(conn, at="10 minutes")["xmin_horizon"][0] == "warn"
        assert health(conn, at="2 hours")["xmin_horizon"][0] == "fail"
        assert health(conn, at="2 hours")["last_vacuum"][0] == "warn"  # due, and nothing vacuumed for 2 h

        env = {"PGOPTIONS": "-c brooq.now=" + str(conn.execute("select now() + interval '2 hours'").fetchone()[0]).replace(" ", "T")}
        cli = brooq("health", dsn=db, env=env)
        assert cli.returncode == 4, cli.stdout + cli.stderr
        assert re.search(rf"xmin_horizon +fail +oldest: transaction of pid {holder_pid} ", cli.stdout), cli.stdout

        holder.rollback()  # the transaction ends: vacuum can clean up
        conn.execute("vacuum brooq.job")
        conn.execute("select pg_stat_force_next_flush()")
        conn.execute("select 1")
        checks = health(conn, at="2 hours")
        assert checks["xmin_horizon"] == ("ok", "nothing holds back vacuum") or \
            f"pid {holder_pid} " not in checks["xmin_horizon"][1]
        assert checks["dead_tuples"][0] == "ok", checks["dead_tuples"]


def test_health_sees_leases_nobody_reaps_paused_topics_and_jobs_that_keep_losing_leases(db: str) -> None:
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute("select brooq.declare_topic('mail', max_lease_losses => 5)")
        conn.execute("select brooq.declare_topic('report')")
        conn.execute("select brooq.enqueue('mail')")
        conn.execute("select * from brooq.claim('w', array['mail'], lease => '1 second')")
        checks = health(conn)
        assert checks["expired_leases"][0] == "ok"  # expired a moment ago at most: a reaper will come
        status, detail = health(conn, at="5 minutes")["expired_leases"]
        assert status == "warn" and detail.startswith("1 job in flight with a lease expired more than 1 minute ago")
        assert health(conn, at="30 minutes")["expired_leases"][0] == "fail"
        done = brooq("health", dsn=db, env={"PGOPTIONS": "-c brooq.now=" + str(
            conn.execute("select now() + interval '5 minutes'").fetchone()[0]).replace(" ", "T")})
        assert done.returncode == 3, done.stdout + done.stderr

        # lost leases: reaped twice in a row (the worker died under it, twice)
        with conn.transaction():
            conn.execute("select set_config('brooq.now', (now() + interval '5 minutes')::text, true)")
            assert conn.execute("select count(*) from brooq.reap()").fetchone() == (1,)
            conn.execute("select * from brooq.claim('w', array['mail'], lease => '1 second')")
            conn.execute("select set_config('brooq.now', (now() + interval '10 minutes')::text, true)")
            assert conn.execute("select count(*) from brooq.reap()").fetchone() == (1,)
        status, detail = health(conn)["lost_leases"]
        assert status == "warn"
        assert "1 job lost its lease 2 times or more in a row" in detail and "2 of max_lease_losses 5" in detail
        assert health(conn)["expired_leases"][0] == "ok"  # reaped

        # a paused topic: ok while nothing waits, warn once a job is ready
        conn.execute("select brooq.pause_topic('report')")
        status, detail = health(conn)["paused_topics"]
        assert status == "ok" and detail.startswith("paused: report (0 ready, paused since ")
        conn.execute("select brooq.enqueue('report')")
        status, detail = health(conn)["paused_topics"]
        assert status == "warn" and detail.startswith("paused: report (1 ready, paused since ")


def test_health_is_for_workers_and_admins(db: str) -> None:
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute("drop role if exists health_producer")
        conn.execute("create role health_producer login in role brooq_producer")
        conn.execute("drop role if exists health_worker")
        conn.execute("create role health_worker login in role brooq_worker")
    try:
        worker = brooq("health", dsn=psycopg.conninfo.make_conninfo(db, user="health_worker"))
        assert worker.returncode == 0, worker.stdout + worker.stderr
        producer = brooq("health", dsn=psycopg.conninfo.make_conninfo(db, user="health_producer"))
        assert producer.returncode == 1 and "brooq_worker" in producer.stderr and "42501" in producer.stderr
    finally:
        with psycopg.connect(db, autocommit=True) as conn:
            conn.execute("drop role health_producer")
            conn.execute("drop role health_worker")


# --- periodic jobs ------------------------------------------------------------------

@pytest.fixture
def cron_conn(tap_dsn: str) -> Iterator[Conn]:
    """The database where pg_cron lives (brooq deployed there); schedules removed after."""
    with psycopg.connect(tap_dsn, autocommit=True) as conn:
        if conn.execute("select to_regnamespace('cron') is null").fetchone() == (True,):
            pytest.skip("pg_cron is not installed in the test database")
        conn.execute("select brooq.declare_topic('periodic.report')")
        try:
            yield conn
        finally:
            for (name,) in conn.execute("select name from brooq.schedules where topic = 'periodic.report'").fetchall():
                conn.execute("select brooq.unschedule(%s)", [name])
            conn.execute("delete from brooq.job where topic = 'periodic.report'")


def test_schedule_list_and_unschedule_from_the_command_line(cron_conn: Conn, tap_dsn: str) -> None:
    done = brooq("schedule", "periodic-nightly", "0 3 * * *", "periodic.report", '{"kind": "nightly"}',
                 "--priority", "4", dsn=tap_dsn)
    assert done.returncode == 0, done.stderr
    assert re.fullmatch(r"scheduled periodic-nightly: '0 3 \* \* \*' enqueues a job of topic periodic.report "
                        r"each time \(pg_cron job \d+\)\n", done.stdout)
    row = cron_conn.execute("select command, username from cron.job where jobname = 'brooq_schedule.periodic-nightly'"
                            ).fetchone()
    assert row == ("select brooq._schedule_tick('periodic-nightly')", "postgres")

    listed = brooq("schedule", "--list", "--json", dsn=tap_dsn)
    mine = [s for s in json.loads(listed.stdout) if s["name"] == "periodic-nightly"]
    assert [(s["cron"], s["topic"], s["payload"], s["priority"], s["last_job_id"]) for s in mine] == [
        ("0 3 * * *", "periodic.report", {"kind": "nightly"}, 4, None)]
    job = cron_conn.execute("select brooq._schedule_tick('periodic-nightly')").fetchone()
    text = brooq("schedule", "--list", dsn=tap_dsn).stdout
    assert re.search(rf"periodic-nightly +0 3 \* \* \* +pg_cron +periodic.report +{{\"kind\":\"nightly\"}} +4 +- +\S+ \S+ +"
                     rf"{job[0]} \(pending\)", text), text

    assert brooq("unschedule", "periodic-nightly", dsn=tap_dsn).stdout == "unscheduled periodic-nightly\n"
    again = brooq("unschedule", "periodic-nightly", dsn=tap_dsn)
    assert (again.returncode, again.stdout) == (1, "no schedule named periodic-nightly\n")
    assert cron_conn.execute("select count(*) from cron.job where jobname like 'brooq_schedule.periodic-%'"
                             ).fetchone() == (0,)


def test_two_runs_of_one_tick_at_once_enqueue_one_job(cron_conn: Conn, tap_dsn: str) -> None:
    cron_conn.execute("select brooq.schedule('periodic-race', '* * * * *', 'periodic.report')")
    cron_conn.execute("select cron.alter_job(jobid, active => false) from cron.job "
                      "where jobname = 'brooq_schedule.periodic-race'")  # only this test ticks it
    at = "2031-01-01 03:00:00+00"
    with psycopg.connect(tap_dsn) as first, psycopg.connect(tap_dsn) as second:
        for conn, second_of_minute in ((first, "00.2"), (second, "59.8")):
            conn.execute(f"set brooq.now = '2031-01-01 03:00:{second_of_minute}+00'")
        one = first.execute("select brooq._schedule_tick('periodic-race')").fetchone()  # not committed yet
        result: list[object] = []
        racer = threading.Thread(target=lambda: result.append(
            second.execute("select brooq._schedule_tick('periodic-race')").fetchone()))
        racer.start()
        time.sleep(0.5)
        assert racer.is_alive()  # waits for the first run's transaction
        first.commit()
        racer.join(10)
        second.commit()
    assert result == [one] and one is not None
    rows = cron_conn.execute("select id, idempotency_key from brooq.job where topic = 'periodic.report'").fetchall()
    assert rows == [(one[0], None)]
    tick = cron_conn.execute("select last_tick_at, last_job_id from brooq.schedules where name = 'periodic-race'").fetchone()
    assert tick == (datetime.fromisoformat(at), one[0])


def test_schedule_without_pg_cron_says_how_to_install_it(db: str) -> None:
    declare(db, "report")
    done = brooq("schedule", "nightly", "0 3 * * *", "report", "--ticker", "pg_cron", dsn=db)
    assert done.returncode == 1
    assert 'pg_cron is not installed in database "' in done.stderr
    assert "[55000 object_not_in_prerequisite_state]" in done.stderr and "shared_preload_libraries" in done.stderr
    with psycopg.connect(db) as conn:
        assert conn.execute("select count(*) from brooq.schedules").fetchone() == (0,)


def test_pg_cron_runs_a_schedule_and_enqueues_one_job_for_its_tick(cron_conn: Conn) -> None:
    """A real pg_cron run: '* * * * *' fires at the next minute (up to ~60 s away)."""
    cron_conn.execute("select brooq.schedule('periodic-minute', '* * * * *', 'periodic.report', '{\"n\": 1}')")
    deadline = time.monotonic() + 75
    rows: list[tuple[object, ...]] = []
    while time.monotonic() < deadline and not rows:
        time.sleep(1)
        rows = cron_conn.execute("select id, idempotency_key, payload from brooq.job "
                                 "where topic = 'periodic.report'").fetchall()
    assert len(rows) == 1, "pg_cron did not run the schedule within 75 s"
    job_id, key, payload = rows[0]
    assert (payload, key) == ({"n": 1}, None)
    run = cron_conn.execute(
        "select d.status, d.return_message from cron.job_run_details d join cron.job c using (jobid) "
        "where c.jobname = 'brooq_schedule.periodic-minute' order by d.runid desc limit 1").fetchone()
    assert run == ("succeeded", "1 row")
    assert cron_conn.execute("select last_job_id from brooq.schedules where name = 'periodic-minute'"
                             ).fetchone() == (job_id,)
