"""The Python package is typed (mypy --strict) and linted (ruff); the tests are pyflakes-clean."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT,
                          capture_output=True, text=True, check=False)


def test_mypy_strict() -> None:
    done = run("mypy", "python/brooq")
    assert done.returncode == 0, done.stdout + done.stderr


def test_ruff() -> None:
    done = run("ruff", "check", "python/brooq")
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_tests_and_their_apps_name_nothing_undefined() -> None:
    """Pyflakes over tests/: a name a chaos app or a test lost (an undefined function, an
    unused import) fails here, not as a worker that cannot start minutes into a run."""
    done = run("ruff", "check", "--select", "F", "tests")
    assert done.returncode == 0, done.stdout + done.stderr
