"""Apply brooq's schema to a database: sqitch when it is there, else the install file.

`sqitch deploy --verify` (with brooq's sqitch.plan) records what it deployed, so a
later deploy applies only the new changes: it installs and it upgrades. Without
sqitch, `psql -f sql/install.sql` installs the whole schema in one transaction,
into a database that has no brooq schema yet; it cannot upgrade one, and refuses.

The schema files travel in the package (brooq/schema/ in the wheel); in a source
checkout they are the repository's own files; $BROOQ_ROOT or --root overrides both.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg.rows import class_row

from brooq.messages import _
from brooq.redact import one_line
from brooq.schema_check import schema_version
from brooq.tools import queries

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
    adopted: str | None = None  # the release recorded in sqitch's registry first, if any
    current: bool = False  # psql found this very version installed and did nothing


def schema_root() -> Path | None:
    """The schema files: $BROOQ_ROOT, the package's own copy, or the source checkout."""
    package = Path(__file__).resolve().parent.parent  # brooq/tools/deploy.py -> brooq/
    candidates = [Path(env)] if (env := os.environ.get("BROOQ_ROOT")) else []
    candidates += [package / "schema", package.parent.parent]
    for root in candidates:
        if (root / "sqitch.plan").is_file() and (root / "sql" / "install.sql").is_file():
            return root
    return None


def libpq_env(dsn: str) -> dict[str, str]:
    """The environment for a libpq client (sqitch, psql) to connect to `dsn`."""
    try:
        params = psycopg.conninfo.conninfo_to_dict(dsn)
    except psycopg.ProgrammingError as exc:
        raise DeployError(_("deploy.invalid_dsn", reason=one_line(exc, dsn=dsn))) from exc
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
    root = root or schema_root()
    if root is None:
        raise DeployError(_("deploy.no_schema_files",
                            path=Path(__file__).resolve().parent / "schema"))
    has_sqitch = shutil.which("sqitch") is not None and (root / "sqitch.plan").is_file()
    has_psql = shutil.which("psql") is not None and (root / "sql" / "install.sql").is_file()
    if method == "auto":
        method = "sqitch" if has_sqitch else "psql"
    env = libpq_env(dsn)
    adopted = None
    if method == "sqitch" and has_sqitch:
        # "db:pg:" takes every connection parameter from the libpq environment.
        cmd = ["sqitch", "deploy", "--verify", "db:pg:"]
        if (found := installed_version(dsn)) is not None and not _sqitch_registered(dsn):
            adopted = _adopt(found, root, env)
    elif method == "psql" and has_psql:
        if (found := installed_version(dsn)) is not None:
            return _already_installed(found, root)
        cmd = ["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-f", str(root / "sql" / "install.sql")]
    else:
        tools = shutil.which(method) is not None  # else the files are missing (the method's own)
        raise DeployError(_("deploy.cannot", plan=root / "sqitch.plan",
                            install=root / "sql" / "install.sql", missing=_missing(root),
                            how=_("deploy.get_files" if tools else "deploy.get_tools")))
    done = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, check=False)
    output = (done.stdout + done.stderr).strip()
    if done.returncode != 0:
        raise DeployError(_("deploy.failed", method=method, code=done.returncode,
                            output=_last_lines(output), rights=missing_rights(dsn, method)))
    return Deployed(method, output, adopted)


@dataclass(frozen=True)
class DeployRights:
    """What the deploying role may do (queries.DEPLOY_RIGHTS)."""

    role: str
    superuser: bool
    database: str
    can_create: bool
    can_grant_roles: bool
    owns_brooq: bool
    owns_sqitch: bool


def missing_rights(dsn: str, method: str) -> str:
    """After a failed deploy: what a non-superuser role lacks to deploy, as a sentence
    to append ('' for a superuser, or when it cannot be told)."""
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            r = conn.cursor(row_factory=class_row(DeployRights)).execute(
                queries.DEPLOY_RIGHTS).fetchone()
    except psycopg.Error:
        return ""
    if r is None or r.superuser:
        return ""
    needs = []
    if not r.can_create:
        needs.append(_("deploy.need_create", database=r.database, role=r.role))
    if not r.can_grant_roles:
        needs.append(_("deploy.need_createrole", role=r.role))
    if not r.owns_brooq:
        needs.append(_("deploy.need_owner"))
    if method == "sqitch" and not r.owns_sqitch:
        needs.append(_("deploy.need_sqitch_owner"))
    if not needs:
        return ""
    return _("deploy.needs", role=r.role, needs="; ".join(needs))


def installed_version(dsn: str) -> str | None:
    """The brooq schema version in the database, or None when it has no brooq schema."""
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            schema, versioned = conn.execute(queries.SCHEMA_PRESENT).fetchone() or (False, False)
            if not schema:
                return None
            if not versioned:
                return _("deploy.older")
            return schema_version(conn)
    except psycopg.Error as exc:
        raise DeployError(_("deploy.cannot_read", reason=one_line(exc, 300))) from exc


def _sqitch_registered(dsn: str) -> bool:
    """Whether sqitch's registry (schema sqitch) records brooq changes in this database."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        if conn.execute(queries.SQITCH_REGISTRY_PRESENT).fetchone() != (True,):
            return False
        row = conn.execute(queries.SQITCH_BROOQ_CHANGES).fetchone()
    return bool(row and row[0])


def _adopt(found: str, root: Path, env: dict[str, str]) -> str:
    """Record a schema installed by sql/install.sql in sqitch's registry, up to its release.

    `sqitch deploy --log-only --to @vX` writes the registry without running a script, so
    the deploy that follows applies only what came after release X.
    """
    tag = f"@v{found}"
    if not any(line.startswith(tag + " ") for line in (root / "sqitch.plan").read_text().splitlines()):
        raise DeployError(_("deploy.not_a_release", version=found))
    cmd = ["sqitch", "deploy", "--log-only", "--to", tag, "db:pg:"]
    done = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise DeployError(_("deploy.adopt_failed", tag=tag, code=done.returncode,
                            output=_last_lines(done.stdout + done.stderr)))
    return found


def _already_installed(found: str, root: Path) -> Deployed:
    """psql installs, it cannot upgrade: nothing to do at this version, else refuse."""
    shipped = _shipped_version(root)
    if found == shipped:
        return Deployed("psql", _("deploy.current", version=found), current=True)
    raise DeployError(_("deploy.cannot_upgrade", version=found, shipped=shipped))


def _shipped_version(root: Path) -> str:
    """The version sql/install.sql installs, read from its brooq.version() body."""
    text = (root / "sql" / "install.sql").read_text()
    m = re.search(r"function brooq\.version\(\).*?select '([^']+)'::text", text, re.DOTALL)
    return m.group(1) if m else "unknown"


def _missing(root: Path) -> str:
    missing = [name for name, ok in (
        ("sqitch", shutil.which("sqitch") is not None),
        (str(root / "sqitch.plan"), (root / "sqitch.plan").is_file()),
        ("psql", shutil.which("psql") is not None),
        (str(root / "sql" / "install.sql"), (root / "sql" / "install.sql").is_file())) if not ok]
    return _("deploy.missing", names=", ".join(missing))


def _last_lines(text: str, n: int = 6) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return " | ".join(lines[-n:]) if lines else _("deploy.no_output")
