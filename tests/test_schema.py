"""The schema's delivery: sqitch deploy/revert/deploy, and sql/install.sql == the plan."""

from __future__ import annotations

import subprocess
import sys

import psycopg

from conftest import ROOT, Server, dump_schema, psql_file, sqitch, sqitch_target


def test_generated_files_are_up_to_date() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "sql" / "build"), "--check"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_deploy_revert_deploy(server: Server, run_id: str) -> None:
    name = f"brooq_roundtrip_{run_id}"
    target = sqitch_target(server.create_db(name))
    try:
        sqitch("deploy", "--verify", target)
        sqitch("revert", "-y", target)
        with psycopg.connect(server.dsn_for(name)) as conn:
            left = conn.execute("select count(*) from pg_namespace where nspname = 'brooq'").fetchone()
            assert left == (0,), "revert left the schema brooq behind"
        sqitch("deploy", "--verify", target)
        sqitch("verify", target)
    finally:
        server.drop_db(name)


def test_install_file_matches_the_plan(server: Server, template_db: str, run_id: str) -> None:
    name = f"brooq_install_{run_id}"
    dsn = server.create_db(name)
    try:
        psql_file(dsn, ROOT / "sql" / "install.sql")
        assert dump_schema(dsn) == dump_schema(server.dsn_for(template_db))
    finally:
        server.drop_db(name)
