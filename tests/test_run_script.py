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
