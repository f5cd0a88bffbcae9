"""The `brooq` command, run as a real subprocess against a real database."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import signal
import subprocess
import textwrap
import time
from pathlib import Path

import psycopg
import pytest
from brooq import __version__
from conftest import ROOT, Server
from helpers import COMMAND, declare, fate, wait_for
from helpers import brooq_cli as brooq


def enqueued_id(stdout: str) -> int:
    match = re.fullmatch(r"id=(\d+) created=(true|false)\n", stdout)
    assert match, stdout
    return int(match.group(1))


# --- enqueue, job, cancel, stats ---------------------------------------------------

def test_enqueue_prints_the_id_and_whether_it_was_created(db: str) -> None:
    declare(db)
    first = brooq("enqueue", "mail", '{"to": "ann@example.com"}', "--key", "k1", dsn=db)
    assert first.returncode == 0, first.stderr
    job_id = enqueued_id(first.stdout)
    assert first.stdout.endswith("created=true\n")
    again = brooq("enqueue", "mail", '{"to": "someone else"}', "--key", "k1", dsn=db)
    assert again.stdout == f"id={job_id} created=false\n"
    with psycopg.connect(db) as conn:
        row = conn.execute("select payload, state from brooq.job where id = %s", [job_id]).fetchone()
    assert row == ({"to": "ann@example.com"}, "pending")


def test_enqueue_delay_and_priority_reach_the_row(db: str) -> None:
    declare(db)
    done = brooq("enqueue", "mail", "{}", "--delay", "1h", "--priority", "7", dsn=db)
    job_id = enqueued_id(done.stdout)
    with psycopg.connect(db) as conn:
        row = conn.execute("select priority, available_at - created_at from brooq.job where id = %s",
                           [job_id]).fetchone()
    assert row is not None
    assert row[0] == 7
    assert abs(row[1].total_seconds() - 3600) < 1


def test_dsn_comes_from_brooq_dsn(db: str) -> None:
    declare(db)
    done = brooq("enqueue", "mail", "[1, 2]", env={"BROOQ_DSN": db})
    assert done.returncode == 0, done.stderr
    job = fate(db, enqueued_id(done.stdout))
    assert (job.state, job.attempts) == ("pending", 0)


def test_an_empty_brooq_dsn_counts_as_unset() -> None:
    done = brooq("stats", env={"BROOQ_DSN": ""})
    assert done.returncode == 2
    assert done.stderr.endswith(
        "\nbrooq: error: no database given: pass --dsn postgresql://... or set BROOQ_DSN\n")


def test_job_prints_its_fate_on_one_line(db: str) -> None:
    declare(db)
    job_id = enqueued_id(brooq("enqueue", "mail", '{"n": 1}', "--priority", "3", dsn=db).stdout)
    done = brooq("job", str(job_id), dsn=db)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("\n") == 1
    assert done.stdout.startswith(f"job {job_id} topic=mail state=pending attempts=0/5 priority=3 ")
    assert "created=" in done.stdout and "available=" in done.stdout


def test_job_shows_result_and_last_error(db: str) -> None:
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute("select brooq.declare_topic('mail', backoff_base => '1 millisecond',"
                     " backoff_max => '1 millisecond')")
    job_id = enqueued_id(brooq("enqueue", "mail", "{}", dsn=db).stdout)
    settle = ("select brooq.settle(job_id => %s, worker => 'w', lease_token => %s, outcome => %s,"
              " error => %s, result => %s)")
    with psycopg.connect(db, autocommit=True) as conn:
        for outcome, error, result in (("failed", "TimeoutError: smtp", None),
                                       ("done", None, '{"sent": true}')):
            time.sleep(0.01)
            token = conn.execute("select lease_token from brooq.claim('w', array['mail'])").fetchone()
            assert token is not None
            conn.execute(settle, [job_id, token[0], outcome, error, result])
    done = brooq("job", str(job_id), dsn=db)
    assert "state=done attempts=2/5" in done.stdout
    assert 'result={"sent":true}' in done.stdout
    assert 'last_error="TimeoutError: smtp"' in done.stdout


def test_job_not_found_exits_1(db: str) -> None:
    done = brooq("job", "999999", dsn=db)
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr == "brooq: error: job 999999 not found (never enqueued, or purged)\n"


def test_cancel_a_pending_job_then_again(db: str) -> None:
    declare(db)
    job_id = enqueued_id(brooq("enqueue", "mail", "{}", dsn=db).stdout)
    first = brooq("cancel", str(job_id), dsn=db)
    assert (first.returncode, first.stdout) == (0, f"canceled job {job_id}\n")
    job = fate(db, job_id)
    assert (job.state, job.attempts) == ("canceled", 0)
    again = brooq("cancel", str(job_id), dsn=db)
    assert again.returncode == 1
    assert "not canceled: already finished" in again.stdout
    unknown = brooq("cancel", "424242", dsn=db)
    assert unknown.returncode == 1 and "not canceled" in unknown.stdout


def test_stats_shows_depth_by_topic(db: str) -> None:
    declare(db, "mail")
    declare(db, "sms")
    for _ in range(3):
        brooq("enqueue", "mail", "{}", dsn=db)
    brooq("enqueue", "sms", "{}", "--delay", "1h", dsn=db)
    done = brooq("stats", dsn=db)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["topic", "paused", "pending", "failed", "ready", "scheduled",
                                "processing", "expired", "oldest", "ready", "held"]
    rows = {line.split()[0]: line.split()[1:] for line in lines[2:]}
    assert rows["mail"][:7] == ["no", "3", "0", "3", "0", "0", "0"]
    assert re.fullmatch(r"\d+ms|\d+\.\ds", rows["mail"][7])  # age of the oldest ready job
    assert rows["sms"] == ["no", "1", "0", "0", "1", "0", "0", "-", "-"]
    assert rows["mail"][8] == "-"  # no flow limit holds anything back


def test_stats_shows_the_jobs_each_flow_limit_holds_back(db: str) -> None:
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute("select brooq.declare_topic('mail', max_in_flight => 1)")
        conn.execute("select brooq.enqueue_many('mail', array_fill('{}'::jsonb, array[3]),"
                     " group_keys => array['a', 'a', 'b'])")
        conn.execute("select brooq.claim('w', array['mail'], 10)")
    done = brooq("stats", dsn=db)
    assert done.returncode == 0, done.stderr
    # 2 ready, no slot left under max_in_flight: both held by it; the second of group a by its group too
    assert done.stdout.splitlines()[2].split()[-4:] == ["2", "in_flight,", "1", "group"]


def test_stats_without_topics(db: str) -> None:
    done = brooq("stats", dsn=db)
    assert (done.returncode, done.stdout) == (0, "no topics yet: declare one with brooq declare-topic NAME\n")


def test_declare_topic_pause_and_resume(db: str) -> None:
    done = brooq("declare-topic", "reports", "--max-attempts", "3", "--backoff-base", "200ms",
                 "--backoff-max", "10s", "--retention", "7d", dsn=db)
    assert done.returncode == 0, done.stderr
    rest = (" max_lease=1h max_lease_losses=5 max_in_flight=none rate=none per=none max_execution=none"
            " retain_done=on retain_payload=on\n")
    assert done.stdout == ("declared topic reports: max_attempts=3 backoff_base=200ms backoff_max=10s"
                           " retention=7d max_payload_bytes=1048576 notify=on" + rest)
    again = brooq("declare-topic", "reports", "--retention", "0s", "--backoff-max", "90s",
                  "--no-notify", dsn=db)
    assert again.stdout == ("declared topic reports: max_attempts=5 backoff_base=1s backoff_max=90s"
                            " retention=0s max_payload_bytes=1048576 notify=off" + rest)
    assert brooq("pause", "reports", dsn=db).stdout == "paused topic reports\n"
    assert brooq("pause", "reports", dsn=db).stdout == "topic reports was already paused\n"
    assert brooq("stats", dsn=db).stdout.splitlines()[2].split()[:2] == ["reports", "yes"]
    assert brooq("resume", "reports", dsn=db).stdout == "resumed topic reports\n"
    with psycopg.connect(db) as conn:
        assert conn.execute("select paused from brooq.topic where name = 'reports'").fetchone() == (False,)


# --- errors ------------------------------------------------------------------------

def test_bad_json_is_one_clear_line_and_exit_1(db: str) -> None:
    declare(db)
    done = brooq("enqueue", "mail", "{to: ann}", dsn=db)
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1
    assert done.stderr.startswith("brooq: error: the payload is not valid JSON: ")
    assert "'{to: ann}'" in done.stderr


def test_nan_is_not_json(db: str) -> None:
    declare(db)
    done = brooq("enqueue", "mail", '{"n": NaN}', dsn=db)
    assert (done.returncode, done.stderr) == (
        1, "brooq: error: the payload is not valid JSON: NaN is not a JSON value (in '{\"n\": NaN}')\n")


def test_payload_from_stdin(db: str) -> None:
    declare(db)
    payload = {"lines": ["x" * 100] * 50}
    done = subprocess.run([*COMMAND, "enqueue", "mail", "-", "--dsn", db], input=json.dumps(payload),
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    with psycopg.connect(db) as conn:
        row = conn.execute("select payload from brooq.job where id = %s",
                           [enqueued_id(done.stdout)]).fetchone()
    assert row == (payload,)


def test_unknown_topic_names_the_topic_and_the_sqlstate(db: str) -> None:
    done = brooq("enqueue", "nope", "{}", dsn=db)
    assert done.returncode == 1
    assert done.stderr == ('brooq: error: topic "nope" does not exist [42704 undefined_object]; '
                           "hint: declare it with brooq declare-topic nope (brooq stats lists the topics)\n")


def test_oversize_payload_is_program_limit_exceeded(db: str) -> None:
    brooq("declare-topic", "tiny", "--max-payload-bytes", "64", dsn=db)
    done = brooq("enqueue", "tiny", json.dumps({"text": "x" * 200}), dsn=db)
    assert done.returncode == 1
    assert "[54000 program_limit_exceeded]" in done.stderr
    assert done.stderr.count("\n") == 1


def test_bad_topic_name_is_invalid_parameter_value(db: str) -> None:
    done = brooq("declare-topic", "Bad Name", dsn=db)
    assert done.returncode == 1
    assert done.stderr.startswith('brooq: error: invalid topic name "Bad Name" [22023 invalid_parameter_value]')


def test_pause_unknown_topic(db: str) -> None:
    done = brooq("pause", "ghost", dsn=db)
    assert done.returncode == 1
    assert '"ghost" does not exist [42704 undefined_object]' in done.stderr


def test_usage_errors_exit_2(db: str) -> None:
    no_dsn = brooq("stats")
    assert no_dsn.returncode == 2
    assert "brooq: error: no database given: pass --dsn postgresql://... or set BROOQ_DSN" in no_dsn.stderr
    bad_delay = brooq("enqueue", "mail", "{}", "--delay", "5", dsn=db)
    assert bad_delay.returncode == 2
    assert "needs a unit" in bad_delay.stderr
    bad_id = brooq("job", "abc", dsn=db)
    assert bad_id.returncode == 2 and "a job id is a number" in bad_id.stderr
    assert brooq().returncode == 2
    few = brooq("demo", "--jobs", "5")
    assert few.returncode == 2 and "the demo needs 20 jobs or more" in few.stderr


def test_unreachable_database_is_one_line(server: Server) -> None:
    done = brooq("stats", dsn="postgresql://postgres@127.0.0.1:1/nothing?connect_timeout=2")
    assert done.returncode == 1
    assert done.stderr.startswith("brooq: error: cannot connect to the database: ")
    assert done.stderr.count("\n") == 1


# --- deploy ------------------------------------------------------------------------

def has_brooq(dsn: str) -> bool:
    with psycopg.connect(dsn) as conn:
        row = conn.execute("select to_regprocedure('brooq.claim(text, text[], integer, interval)')"
                           " is not null").fetchone()
    return bool(row and row[0])


def test_deploy_with_sqitch_into_an_empty_database(empty_db: str) -> None:
    done = brooq("deploy", dsn=empty_db)
    assert done.returncode == 0, done.stderr
    changes = sum(1 for line in (ROOT / "sqitch.plan").read_text().splitlines()
                  if line and not line.startswith(("%", "#", "@")))
    assert done.stdout == f"deployed {changes} changes with sqitch deploy --verify\n"
    assert has_brooq(empty_db)
    again = brooq("deploy", dsn=empty_db)
    assert again.stdout == "nothing to deploy: the schema is up to date (sqitch)\n"


def test_a_database_without_brooq_says_to_deploy(empty_db: str) -> None:
    done = brooq("stats", dsn=empty_db)
    assert done.returncode == 1
    assert done.stderr == ('brooq: error: relation "brooq.topic_stats" does not exist [42P01 undefined_table];'
                           " hint: is brooq deployed in this database? brooq deploy applies the schema\n")


def test_deploy_with_psql(empty_db: str) -> None:
    done = brooq("deploy", "--method", "psql", dsn=empty_db)
    assert (done.returncode, done.stdout) == (0, "deployed sql/install.sql with psql\n"), done.stderr
    assert has_brooq(empty_db)
    again = brooq("deploy", "--method", "psql", dsn=empty_db)  # the same version: nothing to do
    assert (again.returncode, again.stdout) == (
        0, f"brooq schema {__version__} is already installed: nothing to do\n"), again.stderr


def test_deploy_without_schema_files_says_what_is_missing(empty_db: str, tmp_path: Path) -> None:
    done = brooq("deploy", "--root", str(tmp_path), dsn=empty_db)
    assert done.returncode == 1
    assert done.stderr.startswith("brooq: error: cannot deploy: need the sqitch command and ")
    assert f"missing: {tmp_path}/sqitch.plan, {tmp_path}/sql/install.sql" in done.stderr
    assert not has_brooq(empty_db)


# --- worker ------------------------------------------------------------------------

WORKER_MODULE = """
    import brooq

    worker = brooq.Worker(poll_interval=__import__("datetime").timedelta(milliseconds=100))

    @worker.handler("cli.echo")
    def echo(job: brooq.Job) -> object:
        if job.payload.get("fail"):
            raise ValueError("asked to fail")
        return {"echo": job.payload, "concurrency": worker.config.concurrency}

    def make_worker() -> brooq.Worker:
        return worker

    not_a_worker = 42
"""


@pytest.fixture
def worker_app(tmp_path: Path) -> Path:
    (tmp_path / "cliapp.py").write_text(textwrap.dedent(WORKER_MODULE))
    return tmp_path


def count_states(dsn: str) -> dict[str, int]:
    with psycopg.connect(dsn) as conn:
        return dict(conn.execute("select state, count(*) from brooq.job group by state").fetchall())


def test_worker_runs_a_module_object_and_logs_progress_in_a_pipe(db: str, worker_app: Path) -> None:
    declare(db, "cli.echo")
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute("select brooq.enqueue_many('cli.echo', array(select jsonb_build_object('n', i)"
                     " from generate_series(1, 50) i))")
    env = {k: v for k, v in os.environ.items() if not k.startswith("BROOQ_")}
    env |= {"BROOQ_LEASE": "", "BROOQ_PREFETCH": "", "BROOQ_METRICS_ADDRESS": ""}  # empty: unset
    proc = subprocess.Popen([*COMMAND, "worker", "cliapp:worker", "--dsn", db, "--concurrency", "3",
                             "--lease", "5s", "--progress", "log"],
                            cwd=worker_app, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        wait_for(lambda: count_states(db).get("done") == 50, timeout=20)
        time.sleep(0.3)
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    with psycopg.connect(db) as conn:
        result = conn.execute("select result from brooq.job order by id limit 1").fetchone()
    assert result == ({"echo": {"n": 1}, "concurrency": 3},)  # --concurrency reached the worker
    lines = [line for line in err.splitlines() if "jobs/s" in line]
    assert lines, err
    assert re.search(r"jobs/s \| done 50 \| failed/retrying 0 \| dead 0 \| canceled 0 \| in flight 0",
                     lines[-1]), lines[-1]
    assert "\r" not in err  # a pipe gets plain lines
    assert re.search(r"INFO brooq\.worker: worker \S+: topics cli\.echo, concurrency 3, lease 5s", err), err


CODE_MODULE = """
    import datetime

    import brooq

    worker = brooq.Worker(concurrency=2, prefetch=0, name="from-code",
                          poll_interval=datetime.timedelta(milliseconds=100))

    @worker.handler("cli.code")
    def settings(job: brooq.Job) -> object:
        c = worker.config
        return {"concurrency": c.concurrency, "prefetch": c.prefetch, "name": c.name,
                "lease": c.lease.total_seconds()}
"""


def test_worker_options_win_over_values_given_in_code(db: str, tmp_path: Path) -> None:
    # Before, the options became BROOQ_* variables, which a value in code overrides:
    # this worker ran with concurrency 2, prefetch 0, name from-code.
    (tmp_path / "codeapp.py").write_text(textwrap.dedent(CODE_MODULE))
    declare(db, "cli.code")
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute("select brooq.enqueue('cli.code')")
    env = {k: v for k, v in os.environ.items() if not k.startswith("BROOQ_")}
    env["BROOQ_LEASE"] = "7s"  # the environment still fills what neither gives
    proc = subprocess.Popen([*COMMAND, "worker", "codeapp:worker", "--dsn", db, "--concurrency", "5",
                             "--prefetch", "1", "--name", "from-flag", "--progress", "off"],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        wait_for(lambda: count_states(db).get("done") == 1, timeout=20)
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    with psycopg.connect(db) as conn:
        result = conn.execute("select result from brooq.job").fetchone()
    assert result == ({"concurrency": 5, "prefetch": 1, "name": "from-flag", "lease": 7.0},)


def test_worker_options_are_the_worker_settings() -> None:
    done = brooq("worker", "--help")
    assert done.returncode == 0
    for option in ("--concurrency", "--prefetch", "--lease", "--poll-interval", "--reap-interval",
                   "--shutdown-grace", "--hung-grace", "--stats-interval", "--metrics-address",
                   "--name"):
        assert option in done.stdout, option
    assert "$BROOQ_PREFETCH" in done.stdout and "$BROOQ_WORKER_NAME" in done.stdout


def test_worker_in_a_terminal_shows_one_refreshing_line(db: str, worker_app: Path) -> None:
    declare(db, "cli.echo")
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute("select brooq.enqueue_many('cli.echo', array(select jsonb_build_object('n', i)"
                     " from generate_series(1, 20) i))")
    env = {k: v for k, v in os.environ.items() if not k.startswith("BROOQ_")} | {"BROOQ_DSN": db}
    master, slave = pty.openpty()
    proc = subprocess.Popen([*COMMAND, "worker", "cliapp:make_worker"], cwd=worker_app, env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    screen = b""
    try:
        wait_for(lambda: count_states(db).get("done") == 20, timeout=20)
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.1)
            if ready:
                screen += os.read(master, 65536)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
        try:
            while select.select([master], [], [], 0.2)[0]:
                screen += os.read(master, 65536)
        except OSError:
            pass
        os.close(master)
    assert proc.returncode == 0
    text = screen.decode(errors="replace")
    assert text.count("\r\x1b[2K") >= 3  # the same line, redrawn
    assert "done 20 | failed/retrying 0" in text
    # a log line goes above the live line, on a line of its own
    assert re.search(r"(^|\n|\x1b\[2K)\d\d:\d\d:\d\d INFO brooq\.worker: worker \S+: topics cli\.echo", text), text


def test_worker_object_that_is_not_a_worker(db: str, worker_app: Path) -> None:
    number = brooq("worker", "cliapp:not_a_worker", dsn=db, cwd=worker_app)
    assert (number.returncode, number.stderr) == (1, (
        "brooq: error: cliapp:not_a_worker is a int, not a brooq.Worker"
        " (OBJECT is a brooq.Worker or a callable returning one)\n"))
    handler = brooq("worker", "cliapp:echo", dsn=db, cwd=worker_app)
    assert (handler.returncode, handler.stderr) == (1, (
        "brooq: error: calling cliapp:echo() failed: TypeError: echo() missing 1 required"
        " positional argument: 'job'\n"))
    missing = brooq("worker", "nomodule:worker", dsn=db, cwd=worker_app)
    assert missing.returncode == 1 and "cannot import 'nomodule'" in missing.stderr
    no_attr = brooq("worker", "cliapp:nothing", dsn=db, cwd=worker_app)
    assert (no_attr.returncode, no_attr.stderr) == (1, "brooq: error: module 'cliapp' has no 'nothing'\n")
    usage = brooq("worker", "cliapp", dsn=db, cwd=worker_app)
    assert usage.returncode == 2 and "use MODULE:OBJECT" in usage.stderr


def test_worker_bad_configuration_lists_every_problem(db: str, worker_app: Path) -> None:
    done = brooq("worker", "cliapp:worker", "--lease", "100ms", dsn=db, cwd=worker_app,
                 env={"BROOQ_POLL_INTERVAL": "5"})
    assert done.returncode == 1
    assert done.stderr.startswith("brooq: error: invalid worker configuration: ")
    assert "lease" in done.stderr and "BROOQ_POLL_INTERVAL" in done.stderr
    assert done.stderr.count("\n") == 1


RUN_AT_IMPORT = """
    import brooq

    worker = brooq.Worker()

    @worker.handler("cli.echo")
    def echo(job: brooq.Job) -> None:
        pass

    worker.run()  # at module level: runs as soon as it is imported
"""


def test_worker_of_a_module_that_runs_it_at_import_says_so_in_one_line(db: str, tmp_path: Path) -> None:
    # Before, the worker ran inside the import; SIGINT then ended in a raw traceback
    # (RuntimeError: a worker runs once).
    (tmp_path / "runsatimport.py").write_text(textwrap.dedent(RUN_AT_IMPORT))
    done = brooq("worker", "runsatimport:worker", dsn=db, cwd=tmp_path, timeout=20)
    assert (done.returncode, done.stderr) == (1, (
        "brooq: error: module 'runsatimport' runs worker.run() as it is imported, and `brooq worker "
        "runsatimport:worker` runs the worker itself: put worker.run() under "
        "`if __name__ == \"__main__\":`\n"))


# --- jobs, --json, brooq alone ---------------------------------------------------------

def make_jobs(dsn: str) -> dict[str, int]:
    """Three jobs in mail (pending, dead with an error, done) and one in other."""
    declare(dsn, "other")
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("select brooq.declare_topic('mail', max_attempts => 1)")
        ids = {name: conn.execute("select id from brooq.enqueue(%s, '{}')", [topic]).fetchone()[0]
               for name, topic in (("dead", "mail"), ("done", "mail"), ("pending", "mail"),
                                   ("other", "other"))}
        claimed = dict(conn.execute("select id, lease_token from brooq.claim('w', array['mail'], 2)"))
        conn.execute("select brooq.settle(%s, 'w', %s, 'failed', 'NameError: name \"x\" is not defined')",
                     [ids["dead"], claimed[ids["dead"]]])
        conn.execute("select brooq.settle(%s, 'w', %s, 'done')", [ids["done"], claimed[ids["done"]]])
    return ids


def test_jobs_lists_the_dead_ones_of_a_topic_with_their_error(db: str) -> None:
    ids = make_jobs(db)
    done = brooq("jobs", "--topic", "mail", "--state", "dead", dsn=db)
    assert done.returncode == 0, done.stderr
    header, rule, row = done.stdout.splitlines()
    assert header.split() == ["id", "topic", "state", "attempts", "updated", "last_error"]
    assert row.split()[:4] == [str(ids["dead"]), "mail", "dead", "1/1"]
    assert row.endswith('NameError: name "x" is not defined')
    every = brooq("jobs", "--limit", "3", dsn=db)
    assert [line.split()[0] for line in every.stdout.splitlines()[2:]] == [
        str(ids["other"]), str(ids["pending"]), str(ids["done"])]  # newest first, 3 at most
    two = brooq("jobs", "--state", "pending", "--state", "done", "--topic", "mail", dsn=db)
    assert {line.split()[2] for line in two.stdout.splitlines()[2:]} == {"pending", "done"}
    assert brooq("jobs", "--topic", "nothing", dsn=db).stdout == "no jobs match\n"
    bad = brooq("jobs", "--state", "finished", dsn=db)
    assert bad.returncode == 2 and "invalid choice: 'finished'" in bad.stderr


def test_jobs_topic_repeats_and_keeps_every_topic_given(db: str) -> None:
    ids = make_jobs(db)
    declare(db, "third")
    brooq("enqueue", "third", "{}", dsn=db)
    shown = json.loads(brooq("jobs", "--topic", "mail", "--topic", "other", "--json", dsn=db).stdout)
    # was only "other": argparse kept the last --topic
    assert {j["topic"] for j in shown} == {"mail", "other"}
    assert {j["id"] for j in shown} == set(ids.values())


def test_json_output_of_job_jobs_and_stats(db: str) -> None:
    ids = make_jobs(db)
    job = json.loads(brooq("job", str(ids["dead"]), "--json", dsn=db).stdout)
    assert (job["id"], job["state"], job["attempts"], job["last_error"]) == (
        ids["dead"], "dead", 1, 'NameError: name "x" is not defined')
    assert job["created_at"].startswith("20") and "T" in job["created_at"]  # ISO 8601
    jobs = json.loads(brooq("jobs", "--json", "--state", "dead", dsn=db).stdout)
    assert [j["id"] for j in jobs] == [ids["dead"]]
    stats = {s["topic"]: s for s in json.loads(brooq("stats", "--json", dsn=db).stdout)}
    assert (stats["mail"]["pending"], stats["other"]["pending"]) == (1, 1)
    assert isinstance(stats["mail"]["oldest_ready_age"], float)  # seconds


def test_brooq_alone_prints_the_commands() -> None:
    # Before: "brooq: error: the following arguments are required: COMMAND".
    done = brooq()
    assert done.returncode == 2
    assert done.stderr.startswith("usage: brooq COMMAND [options]")
    for command in ("worker", "enqueue", "job", "jobs", "stats", "cancel", "deploy", "demo"):
        assert re.search(rf"^  {command} +\S", done.stderr, re.MULTILINE), command


def test_deploy_without_sqitch_or_psql_says_how_to_get_them(empty_db: str, tmp_path: Path) -> None:
    """A slim image has neither program: the error says which packages bring them."""
    done = brooq("deploy", dsn=empty_db, env={"PATH": str(tmp_path)})
    assert done.returncode == 1
    assert done.stderr.startswith("brooq: error: cannot deploy: need the sqitch command and ")
    assert "missing: sqitch, psql" in done.stderr
    assert "apt-get install sqitch" in done.stderr and "apt-get install postgresql-client" in done.stderr
    assert "apk add postgresql-client" in done.stderr and "docs/operations.md" in done.stderr
    assert not has_brooq(empty_db)


# --- hints in the command line's words -------------------------------------------------

def test_an_unknown_topic_offers_the_closest_name_and_the_cli_command(db: str) -> None:
    declare(db, "email")
    done = brooq("enqueue", "emial", "{}", dsn=db)
    assert done.returncode == 1
    assert done.stderr == ('brooq: error: topic "emial" does not exist [42704 undefined_object]; hint: did you '
                           "mean email? declare it with brooq declare-topic emial (brooq stats lists the topics)\n")
    dropped = brooq("drop-topic", "emial", dsn=db)
    assert dropped.returncode == 1
    assert dropped.stderr.endswith("hint: did you mean email? brooq stats lists the topics\n"), dropped.stderr
    far = brooq("enqueue", "invoices", "{}", dsn=db)  # no close name: no guess
    assert far.stderr.endswith("hint: declare it with brooq declare-topic invoices (brooq stats lists the "
                               "topics)\n"), far.stderr


def test_drop_topic_with_jobs_says_the_options_not_sql(db: str) -> None:
    declare(db, "retired")
    brooq("enqueue", "retired", "{}", dsn=db)
    done = brooq("drop-topic", "retired", dsn=db)
    assert done.returncode == 1
    assert 'topic "retired" still has 1 job [55006 object_in_use]; hint: brooq drop-topic retired --force' \
        in done.stderr, done.stderr
    assert "brooq flush retired" in done.stderr
    assert "=>" not in done.stderr and "array[" not in done.stderr
