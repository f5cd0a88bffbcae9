"""The pressure bench must not rot: `python -m bench pressure` for brooq alone, with
phases of a second on the test server, writes every scenario with figures that make
sense; PgQue, whose SQL it was not given, is skipped with a message that says how."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest
from conftest import Server

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_the_pressure_scenarios_in_seconds(server: Server, tmp_path: Path) -> None:
    out = tmp_path / "pressure.json"
    env = {k: v for k, v in os.environ.items() if k != "BROOQ_BENCH_PGQUE_SQL"}
    t0 = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "bench", "pressure", "--only", "brooq,pgque", "--dsn", server.admin_dsn,
         "--warmup", "0.5s", "--clean", "1s", "--hold", "1s", "--after", "1s", "--every", "0.5s",
         "--rates", "100,300", "--rr-hold", "1s", "--rr-every", "0.25s", "--capacity", "400",
         "--burst", "1000", "--burst-window", "2s", "--quiet", "--json", str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert time.monotonic() - t0 < 60
    assert "pgque skipped: no PgQue SQL: give --pgque-sql" in done.stdout, done.stdout
    assert "| idle-100 | brooq |" in done.stdout  # the summary table, printed

    data = json.loads(out.read_text())
    runs = {r["scenario"]: r for r in data["runs"]}
    assert sorted(runs) == ["burst", "idle-100", "idle-300", "overload", "rr"], sorted(runs)
    assert {r["system"] for r in data["runs"]} == {"brooq"}
    assert data["meta"]["skipped"].keys() == {"pgque"}
    for name, r in runs.items():
        assert list(r["phases"]) == ["clean", "pressure", "after"], (name, r["phases"])
        clean = r["phases"]["clean"]
        # every job offered in the clean phase was started, within a second or so
        assert 0.5 * clean["offered"] <= clean["jobs_per_s"] <= 1.5 * clean["offered"], (name, clean)
        for phase in r["phases"].values():
            assert phase["p50_ms"] is not None and -20 < phase["p50_ms"] <= phase["p99_ms"] < 10_000
            assert phase["dead_max"] >= 0 and phase["backlog_max"] >= 0
        # an interval a sample, each with every figure; claims and settles leave dead tuples
        assert len(r["series"]) >= 2 * sum(b[2] - b[1] for b in r["bounds"]) - 1
        assert all({"jobs_per_s", "p99_ms", "dead_tuples", "backlog", "offered"} <= s.keys()
                   for s in r["series"])
        assert r["phases"]["pressure"]["dead_max"] > 0, name
        assert r["recovery_s"] is None or r["recovery_s"] >= 0
    overload = runs["overload"]["phases"]
    assert overload["pressure"]["offered"] == 3 * overload["clean"]["offered"] == 600
    assert overload["pressure"]["jobs_per_s"] <= 1.25 * 400  # the workers' capacity held
    burst = runs["burst"]["burst"]
    assert burst["jobs"] == 1000 and burst["drained"] and burst["drain_s"] > 0, burst
    assert (tmp_path / "pressure.md").read_text().count("| brooq |") == 6  # 5 scenarios + burst
    with psycopg.connect(server.admin_dsn) as conn:  # every database made was dropped
        row = conn.execute("select count(*) from pg_database where datname like 'bench_%'").fetchone()
    assert row == (0,)
