"""The package as a user gets it: sdist and wheel built, installed in a fresh virtualenv,
`brooq deploy` and `brooq demo` (its own throwaway PostgreSQL) run from a directory
outside the repository."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
import zipfile
from pathlib import Path

import psycopg
import pytest

from brooq import __version__
from conftest import ROOT, Server, sqitch_target


def run(cmd: list[str], cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("BROOQ_ROOT", "PYTHONPATH", "VIRTUAL_ENV")}
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    return done


@pytest.mark.slow
def test_wheel_installs_deploys_and_runs_the_demo_outside_the_checkout(
        server: Server, tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    # sdist first, then the wheel built from the unpacked sdist: both must be complete
    run([sys.executable, "-m", "build", "--outdir", str(dist), str(ROOT)], cwd=tmp_path)
    wheel, = dist.glob("brooq-*.whl")
    sdist, = dist.glob("brooq-*.tar.gz")
    assert wheel.name.startswith(f"brooq-{__version__}-") and sdist.name == f"brooq-{__version__}.tar.gz"
    names = set(zipfile.ZipFile(wheel).namelist())
    plan = [line.split()[0] for line in (ROOT / "sqitch.plan").read_text().splitlines()
            if line and line[0].isalpha()]
    for change in plan:
        for kind in ("deploy", "revert", "verify"):
            assert f"brooq/schema/{kind}/{change}.sql" in names
    assert {"brooq/schema/sqitch.plan", "brooq/schema/sql/install.sql", "brooq/py.typed"} <= names
    assert {"brooq/locale/ru/LC_MESSAGES/brooq.mo", "brooq/locale/ru/LC_MESSAGES/brooq.po"} <= names
    assert {"brooq/contrib/django/management/commands/brooq_worker.py",  # Django finds them by path
            "brooq/contrib/django/management/commands/brooq_deploy.py",
            "brooq/contrib/sqlalchemy/aio.py"} <= names
    meta = zipfile.ZipFile(wheel).read(f"brooq-{__version__}.dist-info/METADATA").decode()
    assert "License-Expression: PostgreSQL" in meta and "Classifier: Typing :: Typed" in meta

    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", str(venv)], cwd=tmp_path)
    run([str(venv / "bin" / "pip"), "install", "-q", str(wheel)], cwd=tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    brooq = str(venv / "bin" / "brooq")
    assert run([brooq, "--version"], cwd=elsewhere).stdout.strip() == f"brooq {__version__}"

    names_made = []
    dsns: dict[str, str] = {}
    try:
        for method in ("sqitch", "psql"):
            name = f"brooq_wheel_{uuid.uuid4().hex[:10]}"
            names_made.append(name)
            dsn = server.create_db(name)
            out = run([brooq, "deploy", "--dsn", dsn, "--method", method], cwd=elsewhere).stdout
            assert ("deployed" in out), out
            with psycopg.connect(dsn) as conn:
                assert conn.execute("select brooq.version()").fetchone() == (__version__,)
            dsns[method] = dsn
        # rollback with the package's own plan: from its schema directory, to the release
        schema = run([str(venv / "bin" / "python"), "-c",
                      "from brooq.tools.deploy import schema_root; print(schema_root())"],
                     cwd=elsewhere).stdout.strip()
        assert schema.startswith(str(venv)) and schema.endswith("brooq/schema"), schema
        run(["sqitch", "revert", "-y", "--to", "@v0.1.0", sqitch_target(dsns["sqitch"])], cwd=Path(schema))
        with psycopg.connect(dsns["sqitch"]) as conn:
            assert conn.execute("select brooq.version()").fetchone() == ("0.1.0",)
        # without --dsn: the package starts its own throwaway PostgreSQL (no checkout here)
        demo = run([brooq, "demo", "--jobs", "300", "--progress", "off"], cwd=elsewhere, timeout=180)
        print(demo.stdout)
        assert "starting a throwaway PostgreSQL" in demo.stdout, demo.stdout
        assert "every job is terminal" in demo.stdout and "as expected" in demo.stdout, demo.stdout
    finally:
        for name in names_made:
            server.drop_db(name)
