"""Apply brooq's schema to a database: sqitch when it is there, else the install file.

`sqitch deploy --verify` (with the repository's sqitch.plan) records what it deployed,
so a later deploy applies only the new changes; `psql -f sql/install.sql` installs
the whole schema in one transaction, into a database that has none of it yet.
Both need the brooq source tree: it is found from this file (python/brooq/tools/ in
the repository) or from $BROOQ_ROOT.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import psycopg

# libpq connection parameters and the environment variables that carry them, so
# that sqitch (Perl, DBD::Pg over libpq) connects exactly where psycopg would.
_PG_ENV = {
    "host": "PGHOST", "hostaddr": "PGHOSTADDR", "port": "PGPORT", "dbname": "PGDATABASE",
    "user": "PGUSER", "password": "PGPASSWORD", "passfile": "PGPASSFILE",
    "options": "PGOPTIONS", "application_name": "PGAPPNAME", "sslmode": "PGSSLMODE",
    "sslrootcert": "PGSSLROOTCERT", "sslcert": "PGSSLCERT", "sslkey": "PGSSLKEY",
    "sslcrl": "PGSSLCRL", "connect_timeout": "PGCONNECT_TIMEOUT",
    "target_session_attrs": "PGTARGETSESSIONATTRS", "service": "PGSERVICE",
    "gssencmode": "PGGSSENCMODE", "krbsrvname": "PGKRBSRVNAME", "channel_binding": "PGCHANNELBINDING",
}


class DeployError(RuntimeError):
    """The schema could not be applied; the message says why and what to do."""


@dataclass(frozen=True)
class Deployed:
    method: str  # "sqitch" or "psql"
    output: str  # what the tool printed


def repo_root() -> Path | None:
    """The brooq source tree: $BROOQ_ROOT, or the checkout this package lives in."""
    candidates = []
    if env := os.environ.get("BROOQ_ROOT"):
        candidates.append(Path(env))
    candidates.append(Path(__file__).resolve().parents[3])  # python/brooq/tools/deploy.py
    for root in candidates:
        if (root / "sqitch.plan").is_file() or (root / "sql" / "install.sql").is_file():
            return root
    return None


def libpq_env(dsn: str) -> dict[str, str]:
    """The environment for a libpq client (sqitch, psql) to connect to `dsn`."""
    try:
        params = psycopg.conninfo.conninfo_to_dict(dsn)
    except psycopg.ProgrammingError as exc:
        raise DeployError(f"invalid DSN: {exc}") from exc
    env = dict(os.environ)
    for key, value in params.items():
        if key in _PG_ENV and value is not None:
            env[_PG_ENV[key]] = str(value)
    return env


def deploy(dsn: str, *, root: Path | None = None, method: str = "auto") -> Deployed:
    """Deploy brooq into the database at `dsn`.

    method: "sqitch" (needs the sqitch command and sqitch.plan), "psql" (needs psql
    and sql/install.sql), or "auto": sqitch when possible, else psql.
    """
    root = root or repo_root()
    if root is None:
        raise DeployError(
            "cannot find the brooq schema files (sqitch.plan, sql/install.sql) next to "
            f"{Path(__file__).resolve().parent}; run from a brooq checkout or set BROOQ_ROOT")
    has_sqitch = shutil.which("sqitch") is not None and (root / "sqitch.plan").is_file()
    has_psql = shutil.which("psql") is not None and (root / "sql" / "install.sql").is_file()
    if method == "auto":
        method = "sqitch" if has_sqitch else "psql"
    env = libpq_env(dsn)
    if method == "sqitch" and has_sqitch:
        # "db:pg:" takes every connection parameter from the libpq environment.
        cmd = ["sqitch", "deploy", "--verify", "db:pg:"]
    elif method == "psql" and has_psql:
        cmd = ["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-f", str(root / "sql" / "install.sql")]
    else:
        raise DeployError(
            f"cannot deploy: need the sqitch command and {root / 'sqitch.plan'}, or the psql command "
            f"and {root / 'sql' / 'install.sql'} ({_missing(root)}); on Debian: "
            "apt-get install sqitch postgresql-client")
    done = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, check=False)
    output = (done.stdout + done.stderr).strip()
    if done.returncode != 0:
        raise DeployError(f"{method} failed (exit {done.returncode}): {_last_lines(output)}")
    return Deployed(method, output)


def _missing(root: Path) -> str:
    missing = [name for name, ok in (
        ("sqitch", shutil.which("sqitch") is not None),
        (str(root / "sqitch.plan"), (root / "sqitch.plan").is_file()),
        ("psql", shutil.which("psql") is not None),
        (str(root / "sql" / "install.sql"), (root / "sql" / "install.sql").is_file())) if not ok]
    return "missing: " + ", ".join(missing)


def _last_lines(text: str, n: int = 6) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return " | ".join(lines[-n:]) if lines else "(no output)"
