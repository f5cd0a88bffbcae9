"""Packaging: what a producer-only application installs, and what the extras add."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import tomllib

from conftest import ROOT

# Run code in a fresh interpreter where `import prometheus_client` fails, as it does
# where brooq was installed without the extra brooq[metrics].
WITHOUT_PROMETHEUS = "import sys; sys.modules['prometheus_client'] = None\n"


def python(code: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", WITHOUT_PROMETHEUS + textwrap.dedent(code)],
                          capture_output=True, text=True, timeout=timeout, check=False)


def test_the_dependencies_are_psycopg_alone_and_the_rest_are_extras() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["dependencies"] == ["psycopg>=3.2"]  # not [binary]: psycopg[c] is the user's choice
    extras = project["optional-dependencies"]
    assert extras["binary"] == ["psycopg[binary]>=3.2"]
    assert extras["metrics"] == ["prometheus-client>=0.20"]
    assert extras["dashboard"] == ["starlette>=0.37", "uvicorn>=0.29"]
    assert "brooq[binary,metrics,dashboard]" in extras["test"]  # .ci/bootstrap installs .[test]


def test_build_output_is_ignored_by_git() -> None:
    for path in ("python/build/lib/x.py", "build/x", "dist/brooq-0.2.0.tar.gz"):
        done = subprocess.run(["git", "check-ignore", "-q", path], cwd=ROOT, check=False)
        assert done.returncode == 0, f"{path} is not in .gitignore"


def test_a_worker_runs_without_prometheus_client(db: str) -> None:
    done = python(f"""
        import threading, brooq, psycopg
        from datetime import timedelta
        worker = brooq.Worker({db!r}, lease=timedelta(seconds=2), poll_interval=timedelta(milliseconds=50))

        @worker.handler("echo")
        def echo(job):
            threading.Thread(target=worker.stop).start()
            return job.payload

        worker.declare_topics()
        with psycopg.connect({db!r}, autocommit=True) as conn:
            job = brooq.enqueue(conn, "echo", {{"n": 1}})
            worker.run()
            print(brooq.get_job(conn, job.id).state)
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "done"


def test_a_metrics_address_without_prometheus_client_says_how_to_get_it(db: str) -> None:
    done = python(f"""
        import brooq
        try:
            brooq.Worker({db!r}, metrics_address="127.0.0.1:0")
        except brooq.ConfigError as exc:
            print(exc.problems)
    """)
    assert done.returncode == 0, done.stderr
    assert "prometheus-client is not installed" in done.stdout
    assert "pip install 'brooq[metrics]'" in done.stdout


def test_brooq_dashboard_without_starlette_says_how_to_get_it() -> None:
    done = python("""
        import sys
        sys.modules['starlette'] = None
        from brooq.tools.cli import main
        sys.exit(main(["dashboard", "--dsn", "dbname=x"]))
    """)
    assert done.returncode == 1
    assert "pip install 'brooq[dashboard]'" in done.stderr, done.stderr
