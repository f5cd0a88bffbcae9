"""Run each pgTAP file under tests/pgtap with pg_prove; a failed assertion fails the test."""

from __future__ import annotations

import subprocess
from pathlib import Path

import psycopg
import pytest

TAP_DIR = Path(__file__).resolve().parent / "pgtap"
FILES = sorted(TAP_DIR.glob("*.sql"))


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_pgtap(path: Path, tap_dsn: str) -> None:
    info = psycopg.conninfo.conninfo_to_dict(tap_dsn)
    done = subprocess.run(
        ["pg_prove", "--verbose", "--failures",
         "-h", str(info.get("host", "127.0.0.1")), "-p", str(info.get("port", "5432")),
         "-U", str(info.get("user", "postgres")), "-d", str(info["dbname"]), str(path)],
        capture_output=True, text=True)
    assert done.returncode == 0, f"pg_prove {path.name} failed:\n{done.stdout}\n{done.stderr}"
