"""The security review's findings (docs/security.md), each proved against a real server.

- pg_cron's commands and the procedures resolve nothing through the search_path of
  whoever runs them: under `search_path = evil, pg_catalog`, with planted operators,
  functions and aggregates that record their calls, nothing is recorded.
- A lease token is required and unguessable; a key held by an open transaction is
  waited for at most brooq.key_wait.
- A login with no brooq grant cannot stall a flow-limited topic's claims; health shows
  a worker only the sessions PostgreSQL shows it; brooq._now and brooq._backoff
  resolve nothing through the caller's search_path.
"""

from __future__ import annotations

import itertools
import re
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from conftest import ROOT
from psycopg import sql

Conn = psycopg.Connection[tuple[Any, ...]]

# The types the planted operators take: every operator of pg_catalog between two of
# them gets a twin in schema evil that records its call, then does the real thing.
TYPES = ("smallint", "integer", "bigint", "numeric", "double precision", "text", "boolean",
         "timestamp with time zone", "interval", "jsonb")
OPERATORS = ("<", ">", "<=", ">=", "=", "<>", "+", "-", "*", "/")


def plant(conn: Conn) -> int:
    """Schema evil: operators, functions and aggregates shadowing pg_catalog's. How many."""
    conn.execute("drop schema if exists evil cascade")
    conn.execute("create schema evil")
    conn.execute("create table evil.calls (what text not null)")
    conn.execute("grant usage on schema evil to public")
    conn.execute("grant insert on evil.calls to public")
    rows = conn.execute("""
        select o.oprname, o.oprleft::regtype::text, o.oprright::regtype::text, o.oprresult::regtype::text
          from pg_operator o
         where o.oprnamespace = 'pg_catalog'::regnamespace and o.oprname = any(%s)
           and o.oprleft::regtype::text = any(%s) and o.oprright::regtype::text = any(%s)""",
                        [list(OPERATORS), list(TYPES), list(TYPES)]).fetchall()
    for i, (op, left, right, result) in enumerate(rows):
        fn = f"evil.op_{i}"
        conn.execute(f"""
            create function {fn}(a {left}, b {right}) returns {result} language plpgsql as $$
            begin
                insert into evil.calls values ('{op}({left}, {right})');
                return a operator(pg_catalog.{op}) b;
            end $$""")
        conn.execute(f"create operator evil.{op} (leftarg = {left}, rightarg = {right}, function = {fn})")
    conn.execute("""
        create function evil.count_step(n bigint) returns bigint language plpgsql as $$
        begin insert into evil.calls values ('count(*)'); return n + 1; end $$""")
    conn.execute("create aggregate evil.count(*) (sfunc = evil.count_step, stype = bigint, initcond = '0')")
    for name, args, body in (
            ("now", "", "pg_catalog.now()"),
            ("clock_timestamp", "", "pg_catalog.clock_timestamp()"),
            ("coalesce_text", "a text", "a"),
            ("length", "a text", "pg_catalog.length(a)"),
            ("left", "a text, n integer", "pg_catalog.left(a, n)")):
        rettype = {"now": "timestamptz", "clock_timestamp": "timestamptz"}.get(name, "text")
        if name == "length":
            rettype = "integer"
        conn.execute(f"""
            create function evil.{name}({args}) returns {rettype} language plpgsql as $$
            begin insert into evil.calls values ('{name}()'); return {body}; end $$""")
    return len(rows)


@pytest.fixture
def cron_db(tap_dsn: str) -> Iterator[Conn]:
    """The database where pg_cron lives, with brooq's maintenance jobs registered."""
    with psycopg.connect(tap_dsn, autocommit=True) as conn:
        if conn.execute("select to_regnamespace('cron') is null").fetchone() == (True,):
            pytest.skip("pg_cron is not installed in the test database")
        conn.execute("select * from brooq.schedule_maintenance('0 0 1 1 *', '0 0 1 1 *')")
        try:
            yield conn
        finally:
            conn.execute("select brooq.unschedule_maintenance()")
            conn.execute("drop schema if exists evil cascade")
            conn.execute("reset search_path")


def test_cron_commands_and_procedures_resolve_nothing_through_the_search_path(cron_db: Conn) -> None:
    conn = cron_db
    planted = plant(conn)
    assert planted > 100
    # something for purge_all to delete, over several batches
    topic = f"evil.{uuid.uuid4().hex[:8]}"
    conn.execute("select brooq.declare_topic(%s, retention => '1 second')", [topic])
    conn.execute("select * from brooq.enqueue_many(%s, array_fill('{}'::jsonb, array[25]))", [topic])
    conn.execute("update brooq.job set state = 'done', updated_at = now() - interval '1 day' "
                 "where topic = %s", [topic])
    # a periodic job too (brooq.schedule): its command ticks the schedule, which enqueues
    conn.execute("select brooq.schedule('evil-tick', '0 0 1 1 *', %s, '{\"n\": 1}')", [topic])
    commands = [r[0] for r in conn.execute(
        "select command from cron.job where jobname in ('brooq_reap', 'brooq_purge', 'brooq_schedule.evil-tick')"
        " order by jobname")]
    assert len(commands) == 3

    # The planted objects do record calls when a statement does resolve through the path.
    conn.execute("set search_path = evil, pg_catalog")
    conn.execute("select count(*) from (values (1 < 2)) v(x)")
    conn.execute("reset search_path")
    seen = {r[0] for r in conn.execute("select what from evil.calls")}
    assert {"count(*)", "<(integer, integer)"} <= seen, seen
    conn.execute("truncate evil.calls")

    conn.execute("set search_path = evil, pg_catalog")
    for command in commands:
        conn.execute(command)
    conn.execute("call brooq.purge_all(10, 2)")  # stops after max_batches
    conn.execute("call brooq.purge_all(10)")  # runs until a short batch
    conn.execute("reset search_path")
    recorded = conn.execute("select what, pg_catalog.count(*) from evil.calls group by what").fetchall()
    assert recorded == [], f"resolved through the caller's search_path: {recorded}"
    left = conn.execute("select count(*) from brooq.job where topic = %s and state = 'done'", [topic]).fetchone()
    assert left == (0,), "purge_all did not run to the end"
    ticked = conn.execute("select count(*) from brooq.job where topic = %s and payload = '{\"n\": 1}'",
                          [topic]).fetchone()
    conn.execute("select brooq.unschedule('evil-tick')")
    conn.execute("delete from brooq.job where topic = %s", [topic])
    assert ticked == (1,), "the schedule's command did not enqueue its job"


def test_maintenance_jobs_registered_by_0_1_0_are_rewritten_on_upgrade(cron_db: Conn) -> None:
    conn = cron_db
    conn.execute("select cron.alter_job(jobid, command => 'select count(*) from brooq.reap(10000)') "
                 "from cron.job where jobname = 'brooq_reap'")
    # the DO block of the reworked change, as the upgrade runs it
    text = (ROOT / "sql" / "function_schedule_maintenance.sql").read_text()
    block = text[text.index("do $$"):text.index("end\n$$;", text.index("do $$")) + len("end\n$$;")]
    conn.execute(block)
    assert conn.execute("select command from cron.job where jobname = 'brooq_reap'").fetchone() == (
        "select pg_catalog.count(*) from brooq.reap(10000)",)


def test_a_key_held_by_an_open_transaction_is_waited_for_at_most_key_wait(db: str) -> None:
    with psycopg.connect(db, autocommit=True) as setup:
        setup.execute("select brooq.declare_topic('keys')")
    holder = psycopg.connect(db)
    try:
        holder.execute("select * from brooq.enqueue('keys', '{}', idempotency_key => 'k-held')")
        with psycopg.connect(db, autocommit=True) as other:
            other.execute("set brooq.key_wait = '300ms'")
            started = time.monotonic()
            with pytest.raises(psycopg.errors.LockNotAvailable):
                other.execute("select * from brooq.enqueue('keys', '{}', idempotency_key => 'k-held')")
            waited = time.monotonic() - started
            assert 0.25 < waited < 3, waited
            with pytest.raises(psycopg.errors.LockNotAvailable):
                other.execute("select * from brooq.enqueue_many('keys', array['{}'::jsonb], "
                              "array['k-held'])")
            # the bound is only for that wait: the session's own lock_timeout is back
            assert other.execute("show lock_timeout").fetchone() == ("0",)
            other.execute("select * from brooq.enqueue('keys', '{}', idempotency_key => 'k-free')")
            assert other.execute("show lock_timeout").fetchone() == ("0",)

            # the holder commits within the wait: the second enqueue gets its id
            other.execute("set brooq.key_wait = '5s'")
            result: list[Any] = []
            t = threading.Thread(target=lambda: result.append(other.execute(
                "select id, created from brooq.enqueue('keys', '{}', idempotency_key => 'k-held')"
            ).fetchone()))
            t.start()
            time.sleep(0.3)
            (held_id,) = holder.execute("select id from brooq.job where idempotency_key = 'k-held'").fetchone() or (None,)
            holder.commit()
            t.join(5)
            assert result == [(held_id, False)]
    finally:
        holder.close()


def test_lease_tokens_are_random_and_required(conn: Conn) -> None:
    conn.execute("select brooq.declare_topic('tokens', max_attempts => 10)")
    conn.execute("select * from brooq.enqueue_many('tokens', array_fill('{}'::jsonb, array[50]))")
    tokens = [r[0] for r in conn.execute(
        "select lease_token from brooq.claim('w', array['tokens'], max_jobs => 50)")]
    assert len(tokens) == 50 and len(set(tokens)) == 1, "one token per claim call"
    # ids and attempts say nothing of the token
    row = conn.execute("select id, attempts from brooq.in_flight limit 1").fetchone()
    assert row is not None and tokens[0] not in row
    with pytest.raises(psycopg.errors.NullValueNotAllowed):
        conn.execute("select * from brooq.heartbeat('w', array[%s]::bigint[])", [row[0]])
    # 50 claims of one job: 50 different tokens, none a counter
    conn.execute("select brooq.declare_topic('tokens.one', max_attempts => 1000)")
    (job,), = conn.execute("select id from brooq.enqueue('tokens.one', '{}')").fetchall()
    seen = []
    for _ in range(50):
        (token,), = conn.execute("select lease_token from brooq.claim('w', array['tokens.one'])").fetchall()
        seen.append(token)
        conn.execute("select brooq.settle(%s, 'w', %s, 'preserve', delay => '0')", [job, token])
    assert len(set(seen)) == 50
    assert sum(1 for a, b in itertools.pairwise(seen) if b == a + 1) == 0
    assert max(abs(t) for t in seen) > 2 ** 40


def test_a_far_future_available_at_is_refused(conn: Conn) -> None:
    conn.execute("select brooq.declare_topic('far')")
    with pytest.raises(psycopg.errors.InvalidParameterValue):
        conn.execute("select * from brooq.enqueue('far', '{}', available_at => '12000-01-01')")
    with pytest.raises(psycopg.errors.InvalidParameterValue):
        conn.execute("select * from brooq.enqueue('far', '{}', delay => '200 years')")
    assert conn.execute("select count(*) from brooq.jobs").fetchone() == (0,)


def test_errors_quote_bad_values_cut_short(conn: Conn) -> None:
    huge = "x" * 1_000_000
    for statement, args in (
            ("select * from brooq.claim('w', array[null, %s])", [huge]),
            ("select brooq.pause_topic(%s)", [huge]),
            ("select * from brooq.enqueue(%s, '{}')", [huge])):
        with pytest.raises(psycopg.Error) as caught:
            conn.execute(statement, args)
        assert len(str(caught.value)) < 1000, statement



def test_a_notify_flood_costs_an_idle_worker_a_bounded_claim_rate(server: Any, db: str) -> None:
    import brooq
    from brooq.listener import QUIET_MAX

    dbname = psycopg.conninfo.conninfo_to_dict(db)["dbname"]
    server.execute(sql.SQL("alter database {} set track_functions = 'pl'").format(sql.Identifier(dbname)))
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute("select brooq.declare_topic('flooded')")
        conn.execute("create role brooq_test_flooder login")
    worker = brooq.Worker(db, concurrency=2)

    @worker.handler("flooded")
    def handle(job: brooq.Job) -> None:
        return None

    def claims() -> int:
        with psycopg.connect(db, autocommit=True) as c:
            row = c.execute("select coalesce(sum(calls), 0) from pg_stat_user_functions "
                            "where schemaname = 'brooq' and funcname = 'claim'").fetchone()
            return int(row[0]) if row else 0

    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    try:
        time.sleep(1.5)  # started, idle
        time.sleep(1.1)  # the worker's backend flushes its statistics at least every second
        before = claims()
        sent, seconds = 0, 4.0
        with psycopg.connect(psycopg.conninfo.make_conninfo(db, user="brooq_test_flooder"),
                             autocommit=True) as flooder:  # no brooq grant at all
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                flooder.execute("notify brooq, 'flooded'")
                sent += 1
        time.sleep(1.1)
        made = claims() - before
    finally:
        worker.stop()
        thread.join(10)
        with psycopg.connect(db, autocommit=True) as conn:
            conn.execute("drop role brooq_test_flooder")
    # the bound: 1/QUIET_MAX claims a second for notifications, plus the polls (1 s)
    bound = (seconds + 1.1) * (1 / QUIET_MAX + 1) + 5
    assert sent > 2000, f"the flood was too thin to prove anything ({sent} notifies)"
    assert made <= bound, f"{sent} notifies made {made} claims (bound {bound:.0f})"


# A DSN, the spellings of its password no message may show, and whether a message
# quotes it (then redacted: ***). libpq quotes a value it refuses as written: a bad
# percent escape, %00, spaces, a whole URI it cannot split; an unencoded "@" or ":"
# in a URI's password splits it, and the pieces land in the host or the port.
@pytest.mark.parametrize(("dsn", "secrets", "echoed"), [
    ("postgresql://u:S3cretPw@[::1/db", ["S3cret"], True),  # libpq echoes a URI it cannot parse, whole
    ("host=127.0.0.1 port=x password=S3cretPw", ["S3cret"], False),
    ("host=127.0.0.1 password='S3cret Pw' nonsense", ["S3cret"], False),
    ("postgresql://u:S3cret%zzX@127.0.0.1/db", ["S3cret"], True),
    ("postgresql://u:S3cret%00X@127.0.0.1/db", ["S3cret"], True),
    ("postgresql://u@127.0.0.1/db?password=S3cret%zzX", ["S3cret"], True),
    ("postgresql://u:S3c'retPw@[::1/db", ["S3c'ret", "retPw"], True),
    ('postgresql://u:S3c"retPw@[::1/db', ['S3c"ret', "retPw"], True),
    ("postgresql://u:S3c retPw@127.0.0.1/db", ["S3c ret", "retPw"], True),
    ("postgresql://u:S3cr@etPw@127.0.0.1:1/db", ["S3cr@et", "etPw"], True),
    ("postgresql://u:S3cr:etPw/x@127.0.0.1:1/db", ["S3cr:et", "etPw"], False),
])
def test_no_password_in_any_message(dsn: str, secrets: list[str], echoed: bool, tmp_path: Any,
                                    capsys: Any, caplog: Any) -> None:
    import subprocess
    import sys

    import brooq
    from brooq import redact
    from brooq.tools import cli

    def shows(text: str) -> list[str]:
        return [s for s in secrets if s in text]

    # `brooq stats` in a process of its own: nothing known of the DSN but its --dsn
    done = subprocess.run([sys.executable, "-m", "brooq.tools.cli", "stats", "--dsn", dsn],
                          capture_output=True, text=True, cwd=tmp_path, timeout=60, check=False)
    assert done.returncode != 0
    assert not shows(done.stdout + done.stderr), done.stderr
    assert ("***" in done.stderr) is echoed, done.stderr
    # the other entry points in this process (fast), each from a clean slate: no
    # password remembered from an earlier case may hide this one's
    for args in (["job", "1", "--dsn", dsn], ["deploy", "--dsn", dsn], ["dashboard", "--dsn", dsn]):
        redact._known.clear()
        assert cli.main(args) != 0
        out, err = capsys.readouterr()
        assert not shows(out + err), (args, err)
        assert ("***" in err) is echoed, err
    redact._known.clear()
    with pytest.raises(brooq.BrooqError) as failed:  # the worker: at start, or when it runs
        # a short wait for a server that is not there: its warnings are checked too
        worker = brooq.Worker(dsn, start_timeout=timedelta(milliseconds=300))

        @worker.handler("t")
        def t(job: brooq.Job) -> None:
            pass

        worker.run()
    assert not shows(str(failed.value) + caplog.text), failed.value
    assert not shows(redact.one_line(f"any message quoting {dsn}"))
    redact._known.clear()
    with pytest.raises(brooq.ConfigError) as bad:
        brooq.WorkerConfig(dsn=dsn, concurrency=0).validate()
    assert not shows(str(bad.value))


def test_the_metrics_server_stays_on_loopback_unless_told() -> None:
    import brooq

    for address in ("0.0.0.0:9464", "[::]:9464", "10.1.2.3:9464"):
        with pytest.raises(brooq.ConfigError, match="not a loopback address"):
            brooq.WorkerConfig(dsn="dbname=x", metrics_address=address).validate()
        brooq.WorkerConfig(dsn="dbname=x", metrics_address=address, metrics_public=True).validate()
    for address in ("127.0.0.1:9464", "[::1]:9464", "localhost:0", "127.0.0.2:1"):
        brooq.WorkerConfig(dsn="dbname=x", metrics_address=address).validate()


def test_the_producer_names_the_busy_key(db: str) -> None:
    import brooq

    with psycopg.connect(db, autocommit=True) as setup:
        brooq.declare_topic(setup, "keys.py")
    with psycopg.connect(db) as holder, psycopg.connect(db, autocommit=True) as other:
        brooq.enqueue(holder, "keys.py", {}, key="order-42")
        other.execute("set brooq.key_wait = '200ms'")
        with pytest.raises(brooq.KeyBusy) as busy:
            brooq.enqueue(other, "keys.py", {}, key="order-42")
        assert "idempotency key 'order-42' of topic 'keys.py' is held by another transaction" in str(busy.value)
        assert busy.value.sqlstate == "55P03" and "brooq.key_wait" in (busy.value.hint or "")
        with pytest.raises(brooq.KeyBusy, match="an idempotency key of the batch"):
            brooq.enqueue_many(other, "keys.py", [{}], keys=["order-42"])
        holder.rollback()


def test_a_non_superuser_owner_deploys_and_runs_the_queue(server: Any, tmp_path: Any) -> None:
    from conftest import sqitch, sqitch_target

    owner = f"brooq_test_owner_{uuid.uuid4().hex[:6]}"
    name = f"brooq_sec_{uuid.uuid4().hex[:10]}"
    dsn = server.create_db(name)
    server.execute(sql.SQL("create role {} login createrole").format(sql.Identifier(owner)))
    try:
        server.execute(sql.SQL("grant create on database {} to {}").format(
            sql.Identifier(name), sql.Identifier(owner)))
        owner_dsn = psycopg.conninfo.make_conninfo(dsn, user=owner)
        sqitch("deploy", "--verify", sqitch_target(owner_dsn))
        with psycopg.connect(owner_dsn, autocommit=True) as conn:
            assert conn.execute("select nspowner::regrole::text from pg_namespace "
                                "where nspname = 'brooq'").fetchone() == (owner,)
            assert conn.execute("select count(*) from pg_proc where pronamespace = 'brooq'::regnamespace "
                                "and proowner <> %s::regrole", [owner]).fetchone() == (0,)
            conn.execute("select brooq.declare_topic('owned')")
            (job,), = conn.execute("select id from brooq.enqueue('owned', '{}')").fetchall()
            (token,), = conn.execute("select lease_token from brooq.claim('w', array['owned'])").fetchall()
            assert conn.execute("select brooq.settle(%s, 'w', %s, 'done')", [job, token]).fetchone() == ("done",)
        sqitch("revert", "-y", sqitch_target(owner_dsn))
    finally:
        server.drop_db(name)
        server.execute(sql.SQL("drop role {}").format(sql.Identifier(owner)))


def test_the_cron_check_of_operations_md_needs_the_owner_not_a_brooq_admin(
        cron_db: Conn, server: Any) -> None:
    """docs/operations.md, pg_cron maintenance, step 4: who can run the check."""
    doc = (ROOT / "docs" / "operations.md").read_text()
    step = doc[doc.index("4. Check that the jobs run"):doc.index("pg_cron uses the real clock")]
    check = step[step.index("```sql") + len("```sql"):step.index("```", step.index("```sql") + 6)]
    assert "as the owner of the schema `brooq`" in step and "A `brooq_admin` cannot" in step
    assert cron_db.execute(check).fetchall() is not None  # the owner (here a superuser) may
    role = f"brooq_test_ops_{uuid.uuid4().hex[:6]}"
    server.execute(sql.SQL("create role {} login").format(sql.Identifier(role)))
    try:
        server.execute(sql.SQL("grant brooq_admin to {}").format(sql.Identifier(role)))
        with psycopg.connect(psycopg.conninfo.make_conninfo(cron_db.info.dsn, user=role),
                             autocommit=True) as ops:
            with pytest.raises(psycopg.errors.InsufficientPrivilege, match="schema cron"):
                ops.execute(check)
            cron_db.execute(sql.SQL("grant usage on schema cron to {}").format(sql.Identifier(role)))
            assert ops.execute("select count(*) from cron.job where jobname like 'brooq_%'"
                               ).fetchone() == (0,)  # the owner's jobs stay hidden from it
        assert cron_db.execute("select count(*) from cron.job where jobname like 'brooq_%'"
                               ).fetchone() == (2,)
    finally:
        cron_db.execute(sql.SQL("revoke usage on schema cron from {}").format(sql.Identifier(role)))
        server.execute(sql.SQL("drop role {}").format(sql.Identifier(role)))


def test_a_handler_declares_its_max_lease_and_the_worker_lease_must_fit(db: str) -> None:
    import brooq

    worker = brooq.Worker(db, lease=timedelta(minutes=90))
    with pytest.raises(brooq.ConfigError, match="lease 5400s is longer than the topic's max_lease 3600s"):
        worker.handler("long.leases")(lambda job: None)

    @worker.handler("long.leases", max_lease=timedelta(hours=2))
    def handle(job: brooq.Job) -> None:
        return None

    worker.declare_topics()
    with psycopg.connect(db) as conn:
        assert conn.execute("select max_lease from brooq.topic where name = 'long.leases'").fetchone() == (
            timedelta(hours=2),)


@contextmanager
def logins(server: Any, db: str, *grants: str | None) -> Iterator[list[tuple[str, str]]]:
    """One login role per grant (None: no brooq grant at all): [(name, dsn)], dropped after."""
    made: list[str] = []
    try:
        for grant in grants:
            role = f"brooq_test_{uuid.uuid4().hex[:8]}"
            server.execute(sql.SQL("create role {} login").format(sql.Identifier(role)))
            made.append(role)
            if grant:
                server.execute(sql.SQL("grant {} to {}").format(
                    sql.Identifier(grant), sql.Identifier(role)))
        yield [(role, psycopg.conninfo.make_conninfo(db, user=role)) for role in made]
    finally:
        for role in made:
            server.execute(sql.SQL("drop role {}").format(sql.Identifier(role)))


def value(conn: Conn, query: str, args: list[Any] | None = None) -> Any:
    row = conn.execute(query, args).fetchone()
    assert row is not None, query
    return row[0]


def test_a_stranger_cannot_stall_a_flow_limited_topic(server: Any, db: str) -> None:
    """A claim of a topic with max_in_flight or rate is serialized on the topic's row of
    brooq.flow_lock, which only brooq's owner may lock: a login with no brooq grant
    holding the advisory key pair (1651666801, hashtext(topic)) stalls nothing, and
    neither it nor a brooq role may lock the row itself."""
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute("select brooq.declare_topic('email', max_in_flight => 10)")
        conn.execute("select brooq.declare_topic('sms', rate => 100, per => '1 second')")
        conn.execute("select * from brooq.enqueue_many('email', array_fill('{}'::jsonb, array[2]))")
        conn.execute("select * from brooq.enqueue('sms', '{}')")
    with logins(server, db, None, "brooq_worker") as [(_, stranger_dsn), (_, worker_dsn)], \
            psycopg.connect(stranger_dsn, autocommit=True) as stranger, \
            psycopg.connect(worker_dsn, autocommit=True) as worker:
        stranger.execute("select pg_advisory_lock(1651666801, hashtext('email'))")
        stranger.execute("select pg_advisory_lock(1651666801, hashtext('sms'))")
        worker.execute("set statement_timeout = '2s'")  # a claim that waits fails with 57014
        started = time.monotonic()
        assert len(worker.execute("select * from brooq.claim('w', array['email'])").fetchall()) == 1
        assert len(worker.execute("select * from brooq.claim('w', array['sms', 'email'], 5)"
                                  ).fetchall()) == 2
        assert time.monotonic() - started < 1.5
        # the row claim serializes on: no right to lock it, for a stranger or a brooq role
        for who in (stranger, worker):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                who.execute("select from brooq.flow_lock where topic = 'email' for update")
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                who.execute("select from brooq.flow_lock where topic = 'email' for key share")
        with pytest.raises(psycopg.errors.InsufficientPrivilege), worker.transaction():
            worker.execute("lock table brooq.flow_lock in access share mode")


def test_health_shows_a_worker_only_what_postgresql_shows_it_of_other_sessions(
        server: Any, db: str) -> None:
    """brooq.health() reads pg_stat_activity with the caller's rights. PostgreSQL shows a
    role without pg_read_all_stats the pid, user, application and transaction ids of
    another role's session, never its transaction start, state or query: health, run
    by a worker, tells no more of another role's old transaction. A transaction of the
    worker's own role it names in full."""
    horizon = "select detail from brooq.health() where name = 'xmin_horizon'"
    with logins(server, db, "brooq_producer", "brooq_worker") as [(other, other_dsn), (me, my_dsn)], \
            psycopg.connect(other_dsn) as holder, psycopg.connect(my_dsn) as mine, \
            psycopg.connect(my_dsn, autocommit=True) as worker:
        holder.execute("select txid_current()")  # an old transaction of another role, left open
        other_pid = value(holder, "select pg_backend_pid()")
        other_start = value(holder, "select to_char(xact_start, 'YYYY-MM-DD HH24:MI:SS') "
                                    "from pg_stat_activity where pid = pg_backend_pid()")
        seen = worker.execute("select xact_start, state, query from pg_stat_activity where pid = %s",
                              [other_pid]).fetchone()
        assert seen == (None, None, "<insufficient privilege>")  # what PostgreSQL shows the worker
        detail = value(worker, horizon)
        assert (f'transaction of pid {other_pid} (user {other}, application ""; '
                "its start is not visible)") in detail, detail
        assert other_start not in detail, detail
        assert "idle in transaction" not in detail and "open for" not in detail, detail
        assert re.search(r"; [1-9]\d* sessions? of other roles not visible", detail), detail
        assert f"grant pg_read_all_stats to {me}" in detail, detail
        # a transaction of the worker's own role: PostgreSQL shows it whole, and so does health
        holder.rollback()
        mine.execute("select txid_current()")
        mine_pid = value(mine, "select pg_backend_pid()")
        detail = value(worker, horizon)
        assert (f'transaction of pid {mine_pid} (user {me}, application "", idle in transaction) '
                "open since") in detail, detail
        # the checks of brooq's own tables answer too (brooq._health_jobs, the owner's rights)
        assert len(worker.execute("select * from brooq.health()").fetchall()) == 6


def test_the_clock_and_the_backoff_resolve_nothing_through_the_search_path(conn: Conn) -> None:
    """brooq._now and brooq._backoff (not SECURITY DEFINER, no SET, so that they stay
    cheap and inlinable) qualify their operators: a caller's search_path with planted
    operators before pg_catalog's changes nothing."""
    assert plant(conn) > 100
    conn.execute("set brooq.now = '2030-01-01 00:00:00+00'")  # _now's frozen path, its comparisons
    conn.execute("set search_path = evil, pg_catalog")
    conn.execute("select 1 = 1")
    conn.execute("reset search_path")
    assert conn.execute("select what from evil.calls").fetchall() == [("=(integer, integer)",)]
    conn.execute("truncate evil.calls")

    conn.execute("set search_path = evil, pg_catalog")
    row = conn.execute("select brooq._now(), brooq._backoff('1 second', '1 minute', 3), "
                       "brooq._backoff('1 hour', '2 hours', 1000)").fetchone()
    conn.execute("reset search_path")
    conn.execute("reset brooq.now")
    recorded = conn.execute("select what, pg_catalog.count(*) from evil.calls group by what").fetchall()
    assert recorded == [], f"resolved through the caller's search_path: {recorded}"
    assert row is not None and row[0].year == 2030
    assert timedelta(seconds=2) <= row[1] <= timedelta(seconds=4)
    assert timedelta(hours=1) <= row[2] <= timedelta(hours=2)


def test_a_producer_holding_a_child_s_enqueue_open_stalls_no_worker(server: Any, db: str) -> None:
    """A login with only brooq_producer enqueues a child of A (being processed) and R
    (pending, another topic) and of B (a topic that keeps no done job) and leaves its
    transaction open. The worker's heartbeat and settle of A, its claim and settle of
    R and its settle of B answer at once (they waited until statement_timeout when the
    enqueue locked its parents FOR SHARE); B is kept, as a parent. Once the producer
    commits, the child's parents have all ended: the next reap counts the ends its
    settles could not see, and the child is pending."""
    with psycopg.connect(db, autocommit=True) as admin:
        admin.execute("select brooq.declare_topic('sec.a'), brooq.declare_topic('sec.r'),"
                      " brooq.declare_topic('sec.b', retain_done => false), brooq.declare_topic('sec.kid')")
        a, r, b = (value(admin, "select id from brooq.enqueue(%s, '{}')", [t]) for t in ("sec.a", "sec.r", "sec.b"))
        claimed = dict(admin.execute("select id, lease_token from brooq.claim('w', array['sec.a', 'sec.b'], 2, '1 hour')")
                       .fetchall())
        assert set(claimed) == {a, b}
        with logins(server, db, "brooq_producer") as [(_, producer_dsn)], \
                psycopg.connect(producer_dsn) as producer, psycopg.connect(db, autocommit=True) as worker:
            kid = value(producer, "select id from brooq.enqueue('sec.kid', '{}', after => %s)", [[a, r, b]])
            worker.execute("set statement_timeout = '3s'")
            started = time.monotonic()
            held = worker.execute("select brooq.heartbeat('w', array[%s]::bigint[], '1 hour', array[%s]::bigint[])",
                                  [a, claimed[a]]).fetchall()
            assert held == [(a,)]
            ((r_token,),) = worker.execute("select lease_token from brooq.claim('w', array['sec.r'])").fetchall()
            for job, token in ((a, claimed[a]), (r, r_token), (b, claimed[b])):
                assert value(worker, "select brooq.settle(%s, 'w', %s, 'done')", [job, token]) == "done"
            assert time.monotonic() - started < 2.0
            assert value(worker, "select state from brooq.job where id = %s", [b]) == "done"  # kept: a parent
            producer.commit()
            assert value(admin, "select state from brooq.job where id = %s", [kid]) == "waiting"
            admin.execute("select brooq.reap()")
            assert admin.execute("select state, parents_left from brooq.job where id = %s", [kid]).fetchone() == (
                "pending", 0)
            assert value(admin, "select count(*) from brooq.job_edge_check") == 0


def test_a_fan_in_of_large_results_fails_no_claim(db: str) -> None:
    """270 parents each settled with a result of about 1 MB (the default
    max_payload_bytes), then a child of all of them, priority 10: the claim of its topic
    hands it its parents' ids, topics and states (once it read their results, 270 MB,
    and failed every claim of the topic with 54000); brooq.parents reads the results,
    a row per parent."""
    n = 270
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute("select brooq.declare_topic('sec.big'), brooq.declare_topic('sec.fanin')")
        parents = [r[0] for r in conn.execute(
            "select id from brooq.enqueue_many('sec.big', array_fill('{}'::jsonb, array[%s]))", [n]).fetchall()]
        tokens = conn.execute("select id, lease_token from brooq.claim('w', array['sec.big'], %s)", [n]).fetchall()
        conn.execute("select brooq.settle_many('w', %s, %s, array_fill('done'::text, array[%s]), null, null,"
                     " array_fill(jsonb_build_object('r', repeat('x', 1000000)), array[%s]))",
                     [[t[0] for t in tokens], [t[1] for t in tokens], n, n])
        child = value(conn, "select id from brooq.enqueue('sec.fanin', '{}', priority => 10, after => %s)", [parents])
        other = value(conn, "select id from brooq.enqueue('sec.fanin', '{}')")
        claimed = conn.execute("select id, jsonb_array_length(parents), octet_length(parents::text)"
                               " from brooq.claim('w', array['sec.fanin', 'sec.big'], 10)").fetchall()
        assert sorted(c[0] for c in claimed) == sorted([child, other])
        ((_, count, size),) = [c for c in claimed if c[0] == child]
        assert count == n and size < 200 * n
        sizes = conn.execute("select pg_catalog.octet_length(result::text) from brooq.parents(%s)", [child]).fetchall()
        assert len(sizes) == n and min(s[0] for s in sizes) > 1_000_000
