"""The README's "Use it in your database" followed literally on an empty server: its
commands, its SQL in psql, its worker file, in order, until the job is done; then its
rollback command, which must take the schema back to the release with the job kept.

Substituted: the database name `appdb` (a fresh one per run) and the port (PGPORT,
since the README's DSNs use libpq's default). `pip install .` is the one line not
run: the test's virtualenv holds the package of this checkout already."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psycopg
import pytest
from conftest import ROOT, Server

README = ROOT / "README.md"
ROLES = ("app", "app_worker", "ops")


def section() -> str:
    text = README.read_text()
    return text[text.index("## Use it in your database"):text.index("## The `brooq` command")]


def blocks(text: str) -> list[tuple[str, str, str]]:
    """(language, code, the prose before it) of each fenced block, in order."""
    found, start = [], 0
    for m in re.finditer(r"^```(\w+)\n(.*?)^```", text, flags=re.DOTALL | re.MULTILINE):
        found.append((m.group(1), m.group(2), text[start:m.start()]))
        start = m.end()
    return found


def commands(code: str) -> list[str]:
    """The lines of a sh block, without their trailing comments."""
    lines = [re.sub(r"(^|\s+)#.*$", "", line).strip() for line in code.splitlines()]
    return [line for line in lines if line]


def test_the_readme_is_followed_literally_to_a_job_done(server: Server, tmp_path: Path) -> None:
    if server.cluster is None:
        pytest.skip("the README addresses a server on localhost as postgres: our own cluster only")
    name = f"brooq_readme_{uuid.uuid4().hex[:8]}"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BROOQ_", "PG"))}
    env |= {"PGPORT": str(server.cluster.port),
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"}

    def sh(line: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(["bash", "-c", line.replace("appdb", name)], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, f"{line}\n{done.stdout}\n{done.stderr}"
        return done

    found = blocks(section())
    assert [lang for lang, _, _ in found] == ["sh", "sql", "python", "sh"]
    (_, setup, _), (_, sql_code, sql_prose), (_, python, python_prose), (_, run, _) = found
    try:
        for line in commands(setup):
            if line == "pip install .":
                continue
            sh(line)
        psql = re.search(r"in `(psql [^`]+)`", sql_prose)
        assert psql, sql_prose
        done = subprocess.run([*psql.group(1).replace("appdb", name).split(), "-X", "-v",
                               "ON_ERROR_STOP=1"], input=sql_code, cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 0, done.stderr
        module = re.search(r"in `(\w+\.py)`", python_prose)
        assert module, python_prose
        (tmp_path / module.group(1)).write_text(python.replace("appdb", name))

        worker_line, job_line = commands(run)
        assert worker_line == "brooq worker app_worker:worker"
        proc = subprocess.Popen(["bash", "-c", f"exec {worker_line}"], cwd=tmp_path, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 30
            with psycopg.connect(server.dsn_for(name), autocommit=True) as conn:
                while conn.execute("select state from brooq.jobs where id = 1").fetchone() != ("done",):
                    assert time.monotonic() < deadline and proc.poll() is None, "the job is not done"
                    time.sleep(0.1)
        finally:
            proc.send_signal(signal.SIGINT)  # Ctrl-C
            out, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err
        assert "sending order 42" in out
        assert "Traceback" not in err and "WARNING" not in err, err  # the usual setup: no warning
        fate = sh(job_line).stdout
        assert fate.startswith("job 1 topic=email state=done attempts=1/5 "), fate
        assert 'key="order-42" result={"sent":true}' in fate, fate

        rollback = re.search(r"^`(sqitch revert [^`]+)`", section(), flags=re.MULTILINE)
        assert rollback, "the README's rollback command"
        sh(rollback.group(1))  # as written: from any directory, with the installed package's plan
        with psycopg.connect(server.dsn_for(name)) as conn:
            assert conn.execute("select brooq.version()").fetchone() == ("0.1.0",)
            assert conn.execute("select state from brooq.job where id = 1").fetchone() == ("done",)
    finally:
        server.drop_db(name)
        server.execute(f"drop role if exists {', '.join(ROLES)}")


def test_the_readme_opens_with_the_two_commands() -> None:
    text = README.read_text()
    first = text[:text.index("\n## ")]
    (code,) = re.findall(r"^```sh\n(.*?)^```", first, flags=re.DOTALL | re.MULTILINE)
    assert commands(code) == ["bash python/demo", "bash tests/run"]
