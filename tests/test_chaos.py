"""Chaos runs: real worker processes under a schedule of faults, judged by the checker.

The short mix runs in the normal suite (about two minutes). The long run (50,000
jobs, every fault, ~15 min) is deselected by default:

    bash tests/run -m long tests/test_chaos.py -s

BROOQ_CHAOS_SEED=<n> replays a seed (each run prints its seed and keeps its run
directory: history.json, report.txt, the server's and every worker's log).
See docs/reliability.md.
"""

from __future__ import annotations

import os
import random

import pytest
from brooq.runner import START_CONFIRM
from chaos.harness import ALL_FAULTS, Config, Result, run


def seed() -> int:
    env = os.environ.get("BROOQ_CHAOS_SEED")
    return int(env) if env else random.SystemRandom().randrange(2**31)


def assert_clean(result: Result) -> None:
    r = result.report
    where = f"seed {result.config.seed}, run directory {result.run_dir}\n{r.summary()}"
    assert r.total == 0, where
    f = r.figures
    assert f["jobs_acked"] == result.config.jobs, where
    assert f["jobs_done"] + f["jobs_dead"] + f["jobs_canceled"] >= result.config.jobs, where
    assert f["purge_errors"] == 0, where  # no deadlock between the purgers, no other error


@pytest.mark.slow
def test_the_short_chaos_mix_breaks_no_promise() -> None:
    result = run(Config(seed=seed(), jobs=1500, rate=25.0))
    assert_clean(result)
    f = result.report.figures
    where = f"seed {result.config.seed}: {f}"
    # the faults really happened, and really cost something
    for kind in ("kill9", "sigstop", "terminate", "restart", "storm", "purge"):
        assert f.get(f"fault_{kind}", 0) >= 1, where
    assert f["reaps"] >= 5 and f["reexecutions"] >= 5, where
    assert f["cancels"] >= 3, where
    assert f["purged"] >= 20_000 and f["old_live_rows_kept"] == 300, where
    # the poison pill (the 500th job kills its worker every time): dead by reap at the
    # 5th lease loss in a row (the checker holds it to that), unless a cancel came first
    assert f.get("fault_exit", 0) >= 1, where
    poison = [j for j in result.history.jobs.values() if j.payload.get("plan") == "exit"]
    assert poison and all(j.state in ("dead", "canceled") for j in poison), where
    assert f["poison_pills_planned"] == sum(j.state == "dead" for j in poison), where
    # workflows: children released, canceled by a dead or canceled parent, run after one
    assert f["workflow_children"] >= 100 and f["workflow_released"] >= 50, where
    assert f["workflow_child_executions"] >= 50, where
    assert f["workflow_children_canceled_by_a_parent"] >= 1, where
    assert f["workflow_children_run_after_a_bad_parent"] >= 1, where


@pytest.mark.long  # ~40 s: kept out of CI to hold the suite under 15 minutes
def test_a_prefetched_job_canceled_before_it_starts_does_not_start_beyond_the_confirm_window() -> None:
    """The cancel-before-start window, measured with no other fault: a worker starts a
    prefetched job only on a lease confirmed at most START_CONFIRM (0.1 s) earlier (one
    heartbeat of the waiting jobs says which were canceled), so a handler never starts
    later than that after a cancel committed, whatever the lease (1.5 s here: the
    window used to be a heartbeat interval, lease/3 = 0.5 s). Allowance: 0.3 s for a
    loaded machine."""
    config = Config(seed=seed(), jobs=400, rate=40.0, workers=2, concurrency=2, lease=1.5,
                    faults=("cancel",), cancel_share=0.15, mix="prefetch")
    result = run(config)
    assert_clean(result)
    f = result.report.figures
    assert f["cancels"] >= 20, f
    assert f["cancel_start_window_s"] <= START_CONFIRM + 0.3, f


@pytest.mark.long
@pytest.mark.timeout(3600)
def test_the_long_chaos_run_breaks_no_promise() -> None:
    result = run(Config(seed=seed(), jobs=50_000, rate=60.0, workers=7, restarts=6,
                        purge_rows=1_000_000, faults=ALL_FAULTS, drain_timeout=300.0))
    print(f"\nseed {result.config.seed}\n{result.report.summary()}")
    assert_clean(result)
