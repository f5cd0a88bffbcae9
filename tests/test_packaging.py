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
    assert extras["otel"] == ["opentelemetry-api>=1.20"]
    assert "brooq[binary,metrics,dashboard,otel]" in extras["test"]  # .ci/bootstrap installs .[test]
    assert "opentelemetry-sdk>=1.20" in extras["test"]  # the tests' in-memory span exporter


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


def test_a_worker_without_opentelemetry_imports_none_of_it(db: str) -> None:
    """brooq.tracing looks for an application's opentelemetry in sys.modules and never
    imports it: without brooq[otel] (here: its import made to fail), and even with it
    installed but unused, enqueue and a whole worker run import nothing of it."""
    for block in ("sys.modules['opentelemetry'] = None", "pass"):
        done = python(f"""
            import sys, threading
            {block}
            import brooq, psycopg
            from datetime import timedelta
            worker = brooq.Worker({db!r}, lease=timedelta(seconds=2),
                                  poll_interval=timedelta(milliseconds=50))

            @worker.handler("echo.otel")
            def echo(job):
                threading.Thread(target=worker.stop).start()
                job.chain("echo.otel.next", {{}})
                return job.payload

            @worker.handler("echo.otel.next")
            def nxt(job):
                return None

            worker.declare_topics()
            with psycopg.connect({db!r}, autocommit=True) as conn:
                job = brooq.enqueue(conn, "echo.otel", {{"n": 1}})
                brooq.enqueue_many(conn, "echo.otel.next", [{{}}])
                worker.run()
                print(brooq.get_job(conn, job.id).state,
                      sorted(m for m in sys.modules if m.startswith("opentelemetry")
                             and sys.modules[m] is not None))
        """)
        assert done.returncode == 0, done.stderr
        assert done.stdout.split(None, 1) == ["done", "[]\n"], done.stdout
