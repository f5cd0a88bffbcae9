"""The monitoring kit in ops/: the alert rules pass promtool's check and their unit
tests, and every brooq metric the rules and the Grafana dashboard use is one a real
worker serves on /metrics."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import threading
import urllib.request
from datetime import timedelta
from pathlib import Path

import brooq
import pytest

from conftest import ROOT

OPS = ROOT / "ops"
PROMTOOL = shutil.which("promtool") or str(ROOT / ".venv" / "bin" / "promtool")


def promtool(*args: str) -> subprocess.CompletedProcess[str]:
    if not Path(PROMTOOL).is_file():
        pytest.fail("promtool is missing: .ci/bootstrap fetches it from Debian's prometheus package")
    return subprocess.run([PROMTOOL, *args], cwd=OPS / "prometheus", capture_output=True, text=True)


def test_the_alert_rules_are_valid_and_fire_as_their_unit_tests_say() -> None:
    checked = promtool("check", "rules", "brooq-alerts.yml")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    tested = promtool("test", "rules", "brooq-alerts.test.yml")
    assert tested.returncode == 0, tested.stdout + tested.stderr


def used_metrics() -> dict[str, set[str]]:
    """brooq_* metric names in the rules and the dashboard, by file."""
    rules = (OPS / "prometheus" / "brooq-alerts.yml").read_text()
    dashboard = json.loads((OPS / "grafana" / "brooq-dashboard.json").read_text())
    exprs = " ".join(t["expr"] for p in dashboard["panels"] for t in p["targets"])
    return {name: set(re.findall(r"\bbrooq_[a-z_]+", text))
            for name, text in (("rules", rules), ("dashboard", exprs))}


def test_every_metric_the_kit_uses_is_served_by_a_worker(db: str) -> None:
    worker = brooq.Worker(db, metrics_address="127.0.0.1:0", poll_interval=timedelta(milliseconds=100),
                          stats_interval=timedelta(milliseconds=200))

    @worker.handler("ops.kit")
    def handle(job: brooq.Job) -> None:
        return None

    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    try:
        for _ in range(100):
            if worker.metrics_url and worker.snapshot().connected:
                break
            threading.Event().wait(0.1)
        url = worker.metrics_url
        assert url is not None
        with urllib.request.urlopen(f"{url}/metrics", timeout=5) as answer:  # loopback only
            exposition = answer.read().decode()
    finally:
        worker.stop()
        thread.join(10)
    served = set(re.findall(r"^# TYPE (brooq_[a-z_]+) (\w+)", exposition, re.M))
    names = {name for name, _ in served}
    # a counter family brooq_x is written brooq_x_total; a histogram has _bucket/_sum/_count
    names |= {f"{name}_total" for name, kind in served if kind == "counter"}
    names |= {f"{name}_{part}" for name, kind in served if kind == "histogram"
              for part in ("bucket", "sum", "count")}
    for where, used in used_metrics().items():
        assert used, f"no brooq metric found in the {where}"
        assert used <= names, f"the {where} uses metrics no worker serves: {sorted(used - names)}"


def test_the_systemd_unit_restarts_a_worker_forever() -> None:
    """A host that boots before its database: the unit starts the worker again every
    RestartSec, with no start limit (systemd's default gives up after 5 starts in 10 s)."""
    import configparser

    path = OPS / "systemd" / "brooq-worker@.service"
    unit = configparser.ConfigParser(interpolation=None, strict=True)
    unit.optionxform = str  # type: ignore[assignment,method-assign]  # systemd keys are case-sensitive
    unit.read_string(path.read_text())
    assert unit["Unit"]["StartLimitIntervalSec"] == "0"
    assert unit["Service"]["Restart"] == "on-failure"
    assert int(unit["Service"]["RestartSec"]) >= 1
    if (analyze := shutil.which("systemd-analyze")) is not None:
        # every key known to this systemd (an unknown one is ignored with a warning)
        done = subprocess.run([analyze, "verify", str(path)], capture_output=True, text=True, check=False)
        assert "Unknown key" not in done.stdout + done.stderr, done.stdout + done.stderr
