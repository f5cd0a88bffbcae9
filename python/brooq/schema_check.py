"""Which schema a package works with: the rule the worker checks at start.

The SQL API only grows (argument lists grow with defaults, never shrink),
so a package works with the schema of its own release and with any later one of
the same major version: upgrade the schema first, then the workers. A schema older
than the package lacks what the package calls, and a worker refuses it at start.
"""

from __future__ import annotations

import re

import psycopg

from brooq import queries
from brooq.errors import WORKER, BrooqError, mapped

UPGRADE = "run `brooq deploy --dsn ...` (schema first, then workers; docs/operations.md, Upgrading)"


class SchemaMismatch(BrooqError):
    """The database holds no brooq schema, or one this package cannot work with."""


def release(version: str) -> tuple[int, int]:
    """(major, minor) of a PEP 440 version: '0.2.0.dev0' -> (0, 2)."""
    m = re.match(r"(\d+)\.(\d+)", version)
    if m is None:
        raise ValueError(f"not a version: {version[:40]!r}")
    return int(m.group(1)), int(m.group(2))


def compatible(package: str, schema: str) -> bool:
    """True when a package of version `package` works with schema version `schema`."""
    (pmajor, pminor), (smajor, sminor) = release(package), release(schema)
    return smajor == pmajor and sminor >= pminor


def schema_version(conn: psycopg.Connection[tuple[object, ...]]) -> str:
    """brooq.version() of the database `conn` is connected to."""
    row = conn.execute(queries.VERSION).fetchone()
    assert row is not None
    return str(row[0])


def check_schema(conn: psycopg.Connection[tuple[object, ...]], package: str) -> str:
    """The schema's version; SchemaMismatch when this package cannot work with it."""
    try:
        with mapped(WORKER, conn):  # 42501: a role without a brooq role may not use the schema
            schema = schema_version(conn)
    except psycopg.errors.InvalidSchemaName as exc:  # 3F000: no schema brooq
        raise SchemaMismatch(
            f"this database has no brooq schema: {UPGRADE}", sqlstate=exc.sqlstate) from exc
    except psycopg.errors.UndefinedFunction as exc:  # 42883: a schema older than brooq.version()
        raise SchemaMismatch(
            f"the brooq schema predates 0.1.0 (no brooq.version()); package {package}: {UPGRADE}",
            sqlstate=exc.sqlstate) from exc
    if not compatible(package, schema):
        if release(schema) < release(package):
            raise SchemaMismatch(f"the brooq schema is {schema}, older than package {package}: {UPGRADE}")
        raise SchemaMismatch(f"the brooq schema is {schema}, a major version ahead of package "
                             f"{package}: install brooq {schema} for the workers")
    return schema
