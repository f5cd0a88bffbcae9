"""The benchmark must not rot: run it in smoke mode (tiny N, one run) for brooq alone.

`python -m bench --smoke --only brooq,brooq-sql` is `bash bench/run --smoke` without
the bench's own virtualenv and the peers from PyPI and npm: it starts its own
durable cluster, runs every scenario and writes the JSON we check here. The long runs
(`python -m bench soak | deep | snapshot | workflows`) run with tiny sizes and
seconds-long phases on the test server.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest
from conftest import Server

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


SECRET = "s3cret-of-the-dsn"


def worker_cmdlines() -> list[str]:
    """The command lines of the bench's worker processes running now (what ps shows)."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            text = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if "bench.workers." in text:
            found.append(text)
    return found


def long_run(*args: str) -> tuple[str, list[str]]:
    """python -m bench <soak|deep|snapshot> ... on the test server: its stdout, and the
    command lines of its workers seen while it ran."""
    proc = subprocess.Popen([sys.executable, "-m", "bench", *args], cwd=ROOT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    seen: set[str] = set()
    deadline = time.monotonic() + 60
    while proc.poll() is None and time.monotonic() < deadline:
        seen.update(worker_cmdlines())
        time.sleep(0.1)
    stdout, stderr = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
    assert proc.returncode == 0, stdout + stderr
    assert SECRET not in stdout + stderr
    return stdout, sorted(seen)


def test_the_long_runs_refuse_a_server_elsewhere() -> None:
    """They load the server, create and drop databases, read its CPU in /proc: a --dsn
    that is not on this machine is refused before any connection, its password unshown."""
    for run in ("soak", "deep", "snapshot", "workflows"):
        done = subprocess.run([sys.executable, "-m", "bench", run, "--dsn",
                               f"postgresql://bench:{SECRET}@203.0.113.7:5432/prod"],
                              cwd=ROOT, capture_output=True, text=True, timeout=30, check=False)
        assert done.returncode == 2, done.stdout + done.stderr
        assert "not a server on this machine" in done.stderr and "203.0.113.7" in done.stderr
        assert SECRET not in done.stdout + done.stderr


def has_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def check_plots(data: dict[str, object], count: int) -> None:
    """The PNGs exist where matplotlib is installed (bench/requirements.txt), else the
    JSON says why there are none."""
    plots = data["plots"]
    assert isinstance(plots, list)
    if has_matplotlib():
        assert len(plots) == count, plots
        for p in plots:
            assert Path(p).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", p
    else:
        assert plots == [] and "matplotlib" in str(data["plots_skipped"]), data["plots_skipped"]


@pytest.mark.slow
def test_the_long_runs_in_seconds(server: Server, tmp_path: Path) -> None:
    """The soak, deep-table and long-snapshot commands (docs/performance.md, "Soak, deep
    tables, long snapshots") with tiny sizes and seconds-long phases, brooq only: every
    figure in the JSON, the PASS/FAIL lines printed, the plots written."""
    # the soak: 3 intervals of 0.5 s at 200 jobs/s, retention 0.3 s (purged from the 1st);
    # on our own cluster (trust) with a password in --dsn, which must show nowhere
    local = server.cluster is not None
    dsn = psycopg.conninfo.make_conninfo(server.admin_dsn, password=SECRET) if local else server.admin_dsn
    out, workers = long_run("soak", "--minutes", "0.025", "--every", "0.5s", "--rate", "200",
                            "--retention", "300ms", "--only", "brooq", "--quiet", "--dsn", dsn,
                            "--json", str(tmp_path / "soak.json"))
    assert out.count("brooq: ") == 4 and "no interval without progress" in out, out
    assert workers and not [w for w in workers if SECRET in w], workers  # ps shows no password
    assert SECRET not in (tmp_path / "soak.json").read_text()
    data = json.loads((tmp_path / "soak.json").read_text())
    [run] = data["runs"]
    assert run["system"] == "brooq" and len(run["samples"]) == 3, run
    for s in run["samples"]:  # PostgreSQL's CPU is read from /proc: our own cluster's only
        for key in data["figures"]:
            assert s[key] is not None or (key == "pg_cpu_us_per_job" and not local), (key, s)
        assert s["jobs"] > 0 and s["rss_mib"] > 10 and s["heap_mib"] > 0 and s["index_mib"] > 0, s
    assert sum(s["purged"] for s in run["samples"]) > 0  # retention deleted finished jobs
    assert [t["ok"] for t in run["targets"]][-1] is True  # every interval made progress
    check_plots(data, len(data["figures"]))

    # deep tables: 2,000 terminal rows, 300 ready over 3 topics
    out, _ = long_run("deep", "--history", "2000", "--ready", "300", "--topics", "3", "--claims", "10",
                   "--drain-seconds", "1", "--quiet", "--dsn", server.admin_dsn,
                   "--json", str(tmp_path / "deep.json"))
    assert "under 100 ms on the deep table" in out, out
    data = json.loads((tmp_path / "deep.json").read_text())
    for case in ("empty", "deep"):
        for key in [*data["figures"], "page: topics (ms)", "page: a job (ms)"]:
            assert data[case][key] > 0, (case, key, data[case])
    assert data["deep"]["live_tuples"] >= 2000 > data["empty"]["live_tuples"]
    assert all(t["ok"] in (True, False) for t in data["targets"])

    # long snapshots: 0.6 s clean, 0.6 s held, 0.3 s after
    out, _ = long_run("snapshot", "--rate", "500", "--warmup", "0.2s", "--clean", "0.6s", "--hold",
                   "0.6s", "--after", "0.3s", "--every", "0.3s", "--quiet", "--dsn", server.admin_dsn,
                   "--json", str(tmp_path / "snapshot.json"))
    assert "claim p99 during the hold" in out, out
    data = json.loads((tmp_path / "snapshot.json").read_text())
    assert [p["phase"] for p in data["phases"]] == ["clean", "during", "after"]
    for p in data["phases"]:
        assert p["jobs_per_s"] > 0 and p["claim_p99_ms"] > 0 and "Index Scan" in p["explain_at_end"], p
    assert len(data["series"]) >= 5 and len(data["targets"]) == 2
    check_plots(data, 1)
    with psycopg.connect(server.admin_dsn) as conn:  # every database made was dropped
        row = conn.execute("select count(*) from pg_database where datname like 'bench_%'").fetchone()
    assert row == (0,)


def test_the_workflow_patterns_have_the_published_shapes() -> None:
    """pg-boss's patterns, parents always before their children (both systems enqueue a
    workflow in one call, a parent named before its child)."""
    from bench.workflows import edges
    n = 1000
    assert edges("baseline", n) == []
    assert edges("fanout", n) == [(c, 0) for c in range(1, n)]
    assert edges("fanin", n) == [(n - 1, p) for p in range(n - 1)]
    assert edges("chain", n) == [(c, c - 1) for c in range(1, n)]
    layered = edges("layered", n, layers=20, parents=3)
    assert len(layered) == (n - 50) * 3  # 20 layers of 50, each job after 3 of the layer before
    assert all(c // 50 == p // 50 + 1 for c, p in layered)
    for pattern in ("fanout", "fanin", "chain", "layered"):
        assert all(p < c for c, p in edges(pattern, n)), pattern


def test_the_workflow_bench_sees_a_child_claimed_before_its_parent() -> None:
    """The order check that every run makes can fail: a child claimed before its parent's
    settle was sent, or whose parent was never settled, is counted."""
    from bench.workflows import ran_early
    chain = [(1, 0), (2, 1)]
    assert ran_early(chain, claimed_at=[1.0, 3.0, 5.0], settle_sent=[2.0, 4.0, 6.0]) == 0
    assert ran_early(chain, claimed_at=[1.0, 1.5, 5.0], settle_sent=[2.0, 4.0, 6.0]) == 1
    assert ran_early(chain, claimed_at=[1.0, 3.0, 5.0], settle_sent=[2.0, 0.0, 6.0]) == 1
    assert ran_early(chain, claimed_at=[1.0, 3.0, 0.0], settle_sent=[2.0, 4.0, 0.0]) == 0


@pytest.mark.slow
def test_the_workflow_bench_in_seconds(server: Server, tmp_path: Path) -> None:
    """`python -m bench workflows` for brooq: every pattern enqueued, drained whole, in
    order, with its figures (pg-boss needs npm: `bash bench/run workflows` brings it)."""
    out, _ = long_run("workflows", "--jobs", "300", "--layers", "5", "--only", "brooq",
                      "--dsn", server.admin_dsn, "--json", str(tmp_path / "wf.json"))
    assert "brooq vs best peer" in out, out
    data = json.loads((tmp_path / "wf.json").read_text())
    runs = {r["pattern"]: r for r in data["runs"]}
    assert sorted(runs) == sorted(["baseline", "fanout", "fanin", "layered", "chain"])
    for r in runs.values():
        assert r["finished"] and r["settled"] == 300 and r["ran_early"] == 0, r
    assert runs["layered"]["edges"] == 240 * 3 and runs["chain"]["edges"] == 299
    figures = {(f["scenario"], f["metric"]): f for f in data["figures"]}
    for pattern in runs:
        for metric in ("enqueue, one call", "drain", "claim p95", "settle p95"):
            assert figures[(pattern, metric)]["median"] > 0 and not figures[(pattern, metric)]["note"]
    with psycopg.connect(server.admin_dsn) as conn:
        row = conn.execute("select count(*) from pg_database where datname like 'bench_%'").fetchone()
    assert row == (0,)
