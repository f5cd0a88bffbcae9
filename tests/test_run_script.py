"""tests/run: its arguments go to pytest, and a file or directory among them is all
that runs (not every test besides)."""

from __future__ import annotations

import os
import subprocess

from conftest import ROOT


def collected(*args: str) -> set[str]:
    """The test files `bash tests/run ARGS --collect-only` would run."""
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    done = subprocess.run(["bash", "tests/run", *args, "--collect-only", "-q"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return {line.split("::")[0] for line in done.stdout.splitlines() if "::" in line}


def test_a_file_argument_runs_that_file_only() -> None:
    assert collected("tests/test_errors_doc.py") == {"test_errors_doc.py"}
    assert collected("tests/test_errors_doc.py::test_the_check_sees_the_messages") == {
        "test_errors_doc.py"}


def test_options_alone_run_every_test_file() -> None:
    files = collected("-m", "not long")  # an option's value is not taken for a file
    assert {"test_errors_doc.py", "test_lint.py", "test_schema.py", "test_cli.py"} <= files


def bootstrap_plan(*purpose: str) -> dict[str, str]:
    """What `.ci/bootstrap --dry-run [PURPOSE]` would install: apt, pip, promtool."""
    done = subprocess.run([".ci/bootstrap", "--dry-run", *purpose], cwd=ROOT, capture_output=True,
                          text=True, timeout=30, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return dict(line.split(": ", 1) for line in done.stdout.splitlines())


def test_the_demo_installs_only_what_it_uses_and_the_tests_everything() -> None:
    demo, tests = bootstrap_plan("demo"), bootstrap_plan()
    # was one list for both: the demo installed Chromium, pgbouncer, PL/Proxy, pgTAP ...
    assert set(demo["apt"].split()) == {"postgresql-15", "postgresql-client-15", "sqitch", "python3-venv"}
    assert (demo["pip"], demo["promtool"]) == (".[binary]", "no")
    assert set(demo["apt"].split()) < set(tests["apt"].split())
    assert {"chromium", "chromium-driver", "pgbouncer", "postgresql-15-plproxy", "postgresql-15-pgtap",
            "postgresql-15-cron", "libtap-parser-sourcehandler-pgtap-perl"} <= set(tests["apt"].split())
    assert (tests["pip"], tests["promtool"]) == (".[test]", "yes")
    # the README's two commands: the demo asks for its own, the tests for everything
    assert "\n.ci/bootstrap demo\n" in (ROOT / "python" / "demo").read_text()
    assert "\n.ci/bootstrap\n" in (ROOT / "tests" / "run").read_text()
