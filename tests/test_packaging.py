"""Packaging: what a producer-only application installs, and what the extras add."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import tomllib

import brooq
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
    assert extras["django"] == ["django>=4.2"]  # brooq.contrib.django
    assert extras["sqlalchemy"] == ["sqlalchemy[asyncio]>=2.0"]  # brooq.contrib.sqlalchemy (and .aio)
    # .ci/bootstrap installs .[test]: every extra, so that CI runs their tests
    assert "brooq[binary,metrics,dashboard,otel,django,sqlalchemy]" in extras["test"]
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
    # was pip install 'brooq[metrics]': brooq is on no package index
    assert "pip install -e '.[metrics]'" in done.stdout and "brooq[" not in done.stdout
    assert f"pip install './brooq-{brooq.__version__}-py3-none-any.whl[metrics]'" in done.stdout
    assert "pip install 'prometheus-client>=" in done.stdout


def test_brooq_dashboard_without_starlette_says_how_to_get_it() -> None:
    done = python("""
        import sys
        sys.modules['starlette'] = None
        from brooq.tools.cli import main
        sys.exit(main(["dashboard", "--dsn", "dbname=x"]))
    """)
    assert done.returncode == 1
    err = done.stderr  # was pip install 'brooq[dashboard]': brooq is on no package index
    assert "pip install -e '.[dashboard]'" in err and "brooq[" not in err, err
    assert f"pip install './brooq-{brooq.__version__}-py3-none-any.whl[dashboard]'" in err, err
    assert "pip install 'starlette>=" in err and "'uvicorn>=" in err, err


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


# --- the package's shape: who imports whom ---------------------------------------------

PACKAGE = ROOT / "python" / "brooq"
# The worker's parts below its loop: none imports the worker, nor the client API above it
# (but the session, which declares the worker's topics with the client's declare_topic).
BELOW_LOOP = ("attempt", "counters", "executors", "leases", "listener", "metrics", "nometrics",
              "runner", "scheduling", "settler", "ticker", "watchdog")
ABOVE_LOOP = ("brooq.worker", "brooq.partitions", "brooq.producer", "brooq.aio", "brooq.waiting")


def brooq_imports() -> dict[str, set[str]]:
    """Each module of python/brooq and the brooq modules it imports, wherever the import
    stands (top level, in a function, under TYPE_CHECKING: a circle is a circle)."""
    import ast

    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([node.module] if node.module else []))
                found |= {f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                          for a in node.names}
        graph[name] = {m for m in found if m in modules and m != name}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The sets of modules that import each other, directly or around a circle."""
    reach = {m: set(deps) for m, deps in graph.items()}
    changed = True
    while changed:  # the transitive closure: a few dozen modules
        changed = False
        for deps in reach.values():
            more = set().union(*(reach[d] for d in deps)) - deps
            if more:
                deps |= more
                changed = True
    found = {frozenset({m} | {d for d in reach[m] if m in reach[d]}) for m in graph if m in reach[m]}
    return sorted(sorted(c) for c in found)


def test_no_module_of_the_package_imports_itself_around_a_circle() -> None:
    assert circles(brooq_imports()) == []


def test_the_circle_finder_finds_a_circle() -> None:
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_core_imports_no_tool_and_no_part_below_the_loop_imports_back_up() -> None:
    graph = brooq_imports()
    assert "brooq.tools.cli" in graph["brooq.tools.__main__"]  # the scan sees imports
    # brooq.contrib (the framework integrations, with their management commands) is a tool
    # too, and so is brooq.testing (drain and the pytest plugin, for applications' tests)
    tools = ("brooq.tools", "brooq.contrib", "brooq.testing")
    core = [m for m in graph if not m.startswith(tools)]
    core_to_tools = sorted(f"{m} -> {d}" for m in core for d in graph[m] if d.startswith(tools))
    assert core_to_tools == []
    assert "brooq.tools.cli" in graph["brooq.contrib.django.management.commands.brooq_worker"]
    parts_up = sorted(f"{m} -> {d}" for m in BELOW_LOOP for d in graph[f"brooq.{m}"] if d in ABOVE_LOOP)
    assert parts_up == []


def test_the_glossary_is_the_schemas(db: str) -> None:
    """brooq.states spells the job states as the domain brooq.job_state does, and the
    outcomes as brooq.settle_many accepts them."""
    import re

    import psycopg
    from brooq import states

    with psycopg.connect(db) as conn:
        row = conn.execute("select pg_get_constraintdef(oid) from pg_constraint"
                           " where conname = 'job_state_known'").fetchone()
    assert row is not None
    assert sorted(re.findall(r"'(\w+)'", row[0])) == sorted(states.STATES)
    settle = (ROOT / "sql" / "function_settle_many.sql").read_text()
    accepted = re.search(r"outcome not in \(([^)]*)\)", settle)
    assert accepted is not None
    assert re.findall(r"'(\w+)'", accepted.group(1)) == list(states.OUTCOMES)
    assert set(states.TERMINAL) | set(states.CANCELABLE) == set(states.STATES)
    assert set(states.COUNTED_AS) == set(states.OUTCOMES)
    assert set(states.COUNTED_AS.values()) == set(states.SETTLED_COUNTS)


def test_a_snapshot_counts_by_the_glossary() -> None:
    """A topic's and a worker's snapshot carry a count for each settled kind, the
    progress line sums them, and the worker's counters fill them from the outcomes."""
    import dataclasses

    from brooq.counters import TopicCounters
    from brooq.snapshot import TopicSnapshot, WorkerSnapshot
    from brooq.states import OUTCOMES, SETTLED_COUNTS
    from brooq.tools.progress import settled

    topic = [f.name for f in dataclasses.fields(TopicSnapshot)]
    assert topic == ["claimed", *SETTLED_COUNTS, "lease_lost", "hung"]
    assert set(topic) <= {f.name for f in dataclasses.fields(WorkerSnapshot)}
    counters = TopicCounters()
    for i, outcome in enumerate(OUTCOMES):
        counters.settled[outcome] = 10 ** i
    counters.lease_lost = 10 ** len(OUTCOMES)
    snap = counters.snapshot()
    assert (snap.done, snap.failed, snap.retried, snap.dead, snap.canceled) == (1, 10, 1100, 100000, 10000)
    assert settled(snap) == int("1" * (len(OUTCOMES) + 1))
