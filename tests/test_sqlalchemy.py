"""brooq.contrib.sqlalchemy against a real PostgreSQL, with SQLAlchemy itself: a Session,
a Connection, an AsyncSession and an AsyncConnection each enqueue in their own
transaction (a rollback drops the job, a commit keeps it), another driver is refused
by name, and every example of docs/sqlalchemy.md runs."""

from __future__ import annotations

import asyncio
import re
import sys
import types
from collections.abc import Iterator

import brooq
import psycopg
import pytest
from conftest import ROOT

import brooq.contrib.sqlalchemy as brooq_sa
import brooq.contrib.sqlalchemy.aio as brooq_sa_aio
from sqlalchemy import create_engine, text
from sqlalchemy.engine import Engine
from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine
from sqlalchemy.orm import Session

GUIDE = ROOT / "docs" / "sqlalchemy.md"


def url_of(dsn: str) -> str:
    info = psycopg.conninfo.conninfo_to_dict(dsn)
    return (f"postgresql+psycopg://{info.get('user', 'postgres')}@{info.get('host', '127.0.0.1')}:"
            f"{info.get('port', 5432)}/{info['dbname']}")


@pytest.fixture
def engine(db: str) -> Iterator[Engine]:
    made = create_engine(url_of(db))
    with made.begin() as connection:
        connection.execute(text("create table signup (email text primary key)"))
        brooq_sa.declare_topic(connection, "email")
    yield made
    made.dispose()


def jobs(db: str) -> list[object]:
    with psycopg.connect(db, autocommit=True) as conn:
        return [j.payload for j in brooq.list_jobs(conn, topic="email")]


def signups(engine: Engine) -> list[str]:
    with engine.connect() as connection:
        return list(connection.execute(text("select email from signup order by 1")).scalars())


def test_a_session_commits_the_job_with_its_rows_and_rolls_both_back(engine: Engine, db: str) -> None:
    with Session(engine) as session:
        session.execute(text("insert into signup values ('ann@example.com')"))
        brooq_sa.enqueue(session, "email", {"to": "ann"})
        assert jobs(db) == []  # not committed yet: invisible elsewhere
        session.rollback()
    with Session(engine) as session, session.begin():
        session.execute(text("insert into signup values ('bob@example.com')"))
        brooq_sa.enqueue_many(session, "email", [{"to": "bob"}, {"to": "bob", "again": True}])
    assert (signups(engine), jobs(db)) == (["bob@example.com"], [{"to": "bob", "again": True},
                                                                   {"to": "bob"}])


def test_a_connection_enqueues_in_its_transaction(engine: Engine, db: str) -> None:
    with engine.connect() as connection:
        connection.execute(text("insert into signup values ('cy@example.com')"))
        job = brooq_sa.enqueue(connection, "email", {"to": "cy"})
        assert brooq_sa.get_job(connection, job.id) is not None  # its own transaction sees it
        connection.rollback()
        assert brooq_sa.get_job(connection, job.id) is None
        brooq_sa.enqueue(connection, "email", {"to": "dee"})
        connection.commit()
    assert (signups(engine), jobs(db)) == ([], [{"to": "dee"}])


def test_an_async_session_and_connection_enqueue_in_their_transaction(engine: Engine, db: str) -> None:
    async def run() -> None:
        async_engine = create_async_engine(engine.url)
        try:
            async with AsyncSession(async_engine) as session:
                await session.execute(text("insert into signup values ('eve@example.com')"))
                await brooq_sa_aio.enqueue(session, "email", {"to": "eve"})
                await session.rollback()
            async with AsyncSession(async_engine) as session, session.begin():
                await session.execute(text("insert into signup values ('fay@example.com')"))
                await brooq_sa_aio.enqueue(session, "email", {"to": "fay"})
            async with async_engine.connect() as connection:
                job = await brooq_sa_aio.enqueue(connection, "email", {"to": "gil"})
                assert await brooq_sa_aio.cancel(connection, job.id) is True
                await connection.rollback()  # the enqueue and its cancel, both gone
                fate = await brooq_sa_aio.get_job(connection, job.id)
                assert fate is None
        finally:
            await async_engine.dispose()

    asyncio.run(run())
    assert (signups(engine), jobs(db)) == (["fay@example.com"], [{"to": "fay"}])


def test_another_driver_is_refused_by_name_before_connecting() -> None:
    with Session(create_engine("sqlite://")) as session, pytest.raises(
            TypeError, match=r"brooq.contrib.sqlalchemy needs the psycopg \(3\) driver, "
                             r"create_engine\('postgresql\+psycopg://...'\); this engine uses sqlite\+pysqlite"):
        brooq_sa.enqueue(session, "email", {})
    with Session(create_engine("sqlite://")) as session, pytest.raises(
            TypeError, match="not a Session: for a Session or Connection use brooq.contrib.sqlalchemy$"):
        asyncio.run(brooq_sa_aio.enqueue(session, "email", {}))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not an AsyncSession: for an AsyncSession"):
        brooq_sa.enqueue(AsyncSession(), "email", {})  # type: ignore[arg-type]


def test_the_guide_examples_run(db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BROOQ_DSN", db)
    monkeypatch.setenv("DATABASE_URL", url_of(db))
    module = types.ModuleType("sqlalchemy_guide")  # a real module: mapped classes look it up
    monkeypatch.setitem(sys.modules, module.__name__, module)
    text_ = GUIDE.read_text()
    found = [(text_.count("\n", 0, m.start()) + 2, m.group(1))
             for m in re.finditer(r"^```python\n(.*?)^```", text_, flags=re.DOTALL | re.MULTILINE)]
    assert len(found) >= 5
    for line, code in found:
        exec(compile("\n" * (line - 1) + code, str(GUIDE), "exec"), module.__dict__)  # noqa: S102
    module.__dict__["engine"].dispose()


def test_a_job_enqueued_after_another_waits_for_it(engine: Engine, db: str) -> None:
    with Session(engine) as session, session.begin():
        parent = brooq_sa.enqueue(session, "email", {"to": "parent"})
        child = brooq_sa.enqueue(session, "email", {"to": "child"}, after=[parent.id])
    with psycopg.connect(db) as conn:
        assert [j.state for j in (brooq.get_job(conn, parent.id), brooq.get_job(conn, child.id)) if j] == [
            "pending", "waiting"]
