"""The benchmark must not rot: run it in smoke mode (tiny N, one run) for brooq alone.

`python -m bench --smoke --only brooq,brooq-sql` is `bash bench/run --smoke` without
the bench's own virtualenv and the peers from PyPI and npm: it starts its own
durable cluster, runs every scenario and writes the JSON we check here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_bench_smoke_runs_every_scenario_for_brooq(tmp_path: Path) -> None:
    out = tmp_path / "smoke.json"
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--smoke", "--quiet", "--only", "brooq,brooq-sql",
         "--json", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "brooq vs best peer" in done.stdout  # the table was printed

    data = json.loads(out.read_text())
    figures = {(f["scenario"], f["metric"], f["system"]): f for f in data["figures"]}
    scenarios = {f["scenario"] for f in data["figures"]}
    assert scenarios == {"enqueue", "drain", "memory", "latency", "ceiling", "grown", "flow"}, scenarios
    assert not data["notes"], data["notes"]  # no worker failed, no job was lost
    assert data["meta"]["settings"]["fsync"] == "on"
    assert data["meta"]["settings"]["synchronous_commit"] == "on"

    for system in ("brooq", "brooq-sql"):
        for procs in ("1 worker process", "2 worker processes"):
            drain = figures[("drain", procs, system)]
            assert drain["min"] > 0 and not drain["note"], drain  # every job drained, in time
            if system == "brooq":  # retain_done => false: done jobs deleted as they settle
                unretained = figures[("drain", f"{procs}, retain_done => false", system)]
                assert unretained["min"] > 0 and not unretained["note"], unretained
        p50 = figures[("latency", "50/s p50", system)]
        # ms: every job started, and soon. The producer notes a commit's time when the commit
        # returns; on a loaded machine the worker can start the job before that (-1.9 ms seen)
        assert -20 < p50["median"] < 1000, p50
    assert figures[("memory", "peak RSS, 1 worker draining", "brooq")]["median"] > 1
    assert figures[("enqueue", "bulk, 300 jobs", "brooq")]["median"] > 0
    assert figures[("ceiling", "pgbench claim ×100 + settle_many, 2 clients", "brooq")]["median"] > 0
    assert figures[("grown", "topic_stats (+3,000 terminal rows)", "brooq")]["median"] > 0
    for case in ("no limit", "max_in_flight 10,000, not binding", "1,000 groups"):  # flow control
        assert figures[("flow", f"drain, 1 worker process ({case})", "brooq")]["median"] > 0
    assert figures[("flow", "1,000 groups, as share of no limit", "brooq")]["median"] > 0
