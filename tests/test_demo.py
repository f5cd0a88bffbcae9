"""`brooq demo`, the README's first command, run as a real subprocess."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import psycopg
import pytest
from helpers import COMMAND


def run_demo(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BROOQ_")}
    return subprocess.run([*COMMAND, "demo", *args], capture_output=True, text=True, env=env,
                          timeout=timeout, check=False)


def enqueued_counts(stdout: str) -> dict[str, int]:
    """From the enqueue lines (`select ...;  -- 249 succeed at once`): jobs per kind."""
    kinds = {"succeed at once": "email", "fail once or twice": "flaky", "fail every attempt": "doomed",
             "delayed": "delayed", "enqueued last": "vip", "long job": "long"}
    counts: dict[str, int] = {}
    for count, text in re.findall(r";  -- (\d+) (.+)$", stdout, re.MULTILINE):
        kind = next(k for prefix, k in kinds.items() if text.startswith(prefix))
        counts[kind] = counts.get(kind, 0) + int(count)
    return counts


def fate_table(stdout: str) -> dict[str, tuple[int, float]]:
    """The printed fate table: state -> (jobs, avg attempts)."""
    block = stdout.split("fate of the", 1)[1].split("\n\n", 1)[0]
    return {m[0]: (int(m[1]), float(m[2]))
            for m in re.findall(r"^(done|dead|canceled|failed|pending|processing)\s+(\d+)\s+([\d.]+)",
                                block, re.MULTILINE)}


def check_fates(stdout: str) -> dict[str, int]:
    counts = enqueued_counts(stdout)
    assert set(counts) == {"email", "flaky", "doomed", "delayed", "vip", "long"}, stdout
    table = fate_table(stdout)
    done = counts["email"] + counts["flaky"] + counts["delayed"] + counts["vip"]
    assert table["done"][0] == done, stdout
    assert table["dead"] == (counts["doomed"], 3.0), stdout  # dead after its 3 attempts
    assert table["canceled"] == (1, 1.0), stdout  # canceled in flight, on its first attempt
    assert set(table) == {"done", "dead", "canceled"}, stdout
    # the flaky jobs needed 2 or 3 attempts, all others 1: the average says so
    retries = sum(1 + i % 2 for i in range(1, counts["flaky"] + 1))
    assert table["done"][1] == pytest.approx((done + retries) / done, abs=0.006), stdout
    return {"done": done, "dead": counts["doomed"], "canceled": 1}


def test_demo_against_a_fresh_database(empty_db: str) -> None:
    done = run_demo("--dsn", empty_db, "--jobs", "400")
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "* deployed the schema with sqitch deploy --verify" in out
    assert "from SQL (psql, one transaction" in out
    expected = check_fates(out)
    assert sum(expected.values()) == 400
    assert re.search(r"a second connection ran select brooq\.cancel\(\d+\) -> true", out), out
    assert re.search(r"its handler saw job\.canceled after \d+\.\ds in flight and returned", out), out
    assert re.search(r"^throughput: the worker finished \d+ jobs \(\d+ attempts, retries included\) in "
                     r"\d+\.\d\ds: \d+ jobs/s, \d+ attempts/s", out, re.MULTILINE), out
    assert out.rstrip().endswith(f"as expected: done {expected['done']}, dead {expected['dead']}, "
                                 "canceled 1")
    # the table is what the database holds
    with psycopg.connect(empty_db) as conn:
        states: dict[str, int] = dict(conn.execute("select state, count(*) from brooq.job group by state").fetchall())
        canceled = conn.execute("select result, topic from brooq.job where state = 'canceled'").fetchall()
    assert states == expected
    assert canceled == [(None, "demo.report")]  # the handler's return after cancel wrote nothing
    # a pipe gets plain progress lines, never a redrawn one
    assert "\r" not in out and re.search(r"^\d\d:\d\d:\d\d +\d+ jobs/s \| done \d+", out, re.MULTILINE), out


def test_demo_twice_on_the_same_database_counts_only_its_own_jobs(empty_db: str) -> None:
    first = run_demo("--dsn", empty_db, "--jobs", "100", "--progress", "off")
    assert first.returncode == 0, first.stdout + first.stderr
    second = run_demo("--dsn", empty_db, "--jobs", "100", "--progress", "off")
    assert second.returncode == 0, second.stdout + second.stderr
    assert "* schema brooq is already deployed in this database: using it" in second.stdout
    check_fates(second.stdout)
    with psycopg.connect(empty_db) as conn:
        total = conn.execute("select count(*) from brooq.job").fetchone()
    assert total == (200,)  # the first run's jobs were left in place


@pytest.mark.slow
def test_demo_without_dsn_starts_and_removes_its_own_postgresql() -> None:
    done = run_demo("--jobs", "200")
    assert done.returncode == 0, done.stdout + done.stderr
    started = re.search(r"^\* starting a throwaway PostgreSQL on 127\.0\.0\.1:\d+ in (\S+) "
                        r"\(stopped and removed at the end\)$", done.stdout, re.MULTILINE)
    assert started, done.stdout
    check_fates(done.stdout)
    assert done.stdout.rstrip().splitlines()[-1] == "* stopped and removed the throwaway PostgreSQL"
    assert not Path(started.group(1)).exists()


def test_demo_with_an_unreachable_database_is_one_line() -> None:
    done = run_demo("--dsn", "postgresql://postgres@127.0.0.1:1/nothing?connect_timeout=2")
    assert done.returncode == 1
    assert done.stderr.startswith("brooq demo: error: connection failed: ")
    assert done.stderr.count("\n") == 1
