"""The producer helpers: thin calls of the SQL functions on the caller's connection."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from typing import Any

import brooq
import psycopg
import pytest

Conn = psycopg.Connection[tuple[Any, ...]]


@dataclasses.dataclass
class Address:
    city: str


@dataclasses.dataclass
class Email:
    to: str
    address: Address
    tags: list[str]


@pytest.fixture
def topic(conn: Conn) -> str:
    brooq.declare_topic(conn, "email", max_attempts=3)
    return "email"


def test_enqueue_returns_id_and_stores_payload(conn: Conn, topic: str) -> None:
    job = brooq.enqueue(conn, topic, {"to": "a@example.com", "n": 1})
    assert isinstance(job, brooq.Enqueued) and job.created and job.id > 0
    fate = brooq.get_job(conn, job.id)
    assert fate is not None
    assert (fate.topic, fate.state, fate.attempts, fate.max_attempts) == (topic, "pending", 0, 3)
    assert fate.payload == {"to": "a@example.com", "n": 1}


def test_enqueued_is_made_from_the_columns_of_enqueue_by_name(conn: Conn, topic: str) -> None:
    """enqueue and enqueue_many build Enqueued by position (no row factory on the hot
    path): the statements' columns must be its fields, in order."""
    from brooq import queries
    from brooq.calls import enqueue_args, enqueue_many_args

    one = conn.execute(queries.ENQUEUE, [*enqueue_args(topic, {}, None, None, None, 0), None])
    many = conn.execute(queries.ENQUEUE_MANY, [*enqueue_many_args(topic, [{}], None, None, None, 0),
                                               None])
    for cur in (one, many):
        assert cur.description is not None
        assert tuple(c.name for c in cur.description) == brooq.Enqueued._fields
    assert brooq.enqueue_many(conn, topic, [{}, {}], keys=["k", "k"])[1].created is False


def test_dataclass_payloads_are_stored_as_objects(conn: Conn, topic: str) -> None:
    job = brooq.enqueue(conn, topic, Email("b@example.com", Address("Lyon"), ["x"]))
    fate = brooq.get_job(conn, job.id)
    assert fate is not None
    assert fate.payload == {"to": "b@example.com", "address": {"city": "Lyon"}, "tags": ["x"]}


def test_a_key_enqueues_once(conn: Conn, topic: str) -> None:
    first = brooq.enqueue(conn, topic, {"n": 1}, key="order-7")
    again = brooq.enqueue(conn, topic, {"n": 2}, key="order-7")
    assert first.created and not again.created and again.id == first.id


def test_enqueue_is_part_of_the_callers_transaction(db: str, topic: str) -> None:
    with psycopg.connect(db) as conn:  # not autocommit: the caller owns the transaction
        job = brooq.enqueue(conn, topic, {"n": 1})
        conn.rollback()
        assert brooq.get_job(conn, job.id) is None
        kept = brooq.enqueue(conn, topic, {"n": 2})
        conn.commit()
    with psycopg.connect(db) as other:
        assert brooq.get_job(other, kept.id) is not None


def test_delay_and_at_use_the_database_clock(conn: Conn, topic: str) -> None:
    later = brooq.enqueue(conn, topic, {}, delay=timedelta(hours=1), priority=5)
    at = datetime(2099, 1, 1, tzinfo=UTC)
    fixed = brooq.enqueue(conn, topic, {}, at=at)
    row = conn.execute("select available_at - created_at from brooq.job where id = %s",
                       [later.id]).fetchone()
    assert row is not None and row[0] == timedelta(hours=1)
    fate = brooq.get_job(conn, fixed.id)
    assert fate is not None and fate.available_at == at
    later_fate = brooq.get_job(conn, later.id)
    assert later_fate is not None and later_fate.priority == 5


def test_enqueue_many_in_input_order_with_keys(conn: Conn, topic: str) -> None:
    existing = brooq.enqueue(conn, topic, {"n": 0}, key="k1")
    jobs = brooq.enqueue_many(conn, topic, [{"n": 1}, {"n": 2}, Address("Nice")],
                              keys=["k1", None, "k3"])
    assert [j.created for j in jobs] == [False, True, True]
    assert jobs[0].id == existing.id
    fates = [brooq.get_job(conn, j.id) for j in jobs]
    assert [f.payload for f in fates if f] == [{"n": 0}, {"n": 2}, {"city": "Nice"}]
    assert brooq.enqueue_many(conn, topic, []) == []


@pytest.mark.parametrize(("call", "error", "sqlstate"), [
    (lambda c: brooq.enqueue(c, "nope", {}), brooq.UnknownTopic, "42704"),
    (lambda c: brooq.enqueue(c, "email", {}, at=datetime.now(UTC), delay=timedelta(1)),
     brooq.InvalidArgument, "22023"),
    (lambda c: brooq.enqueue(c, "email", {}, delay=timedelta(seconds=-1)), brooq.InvalidArgument,
     "22023"),
    (lambda c: brooq.enqueue(c, "email", {"x": "y" * 2000}), brooq.PayloadTooLarge, "54000"),
    (lambda c: brooq.enqueue_many(c, "email", [{}], keys=["a", "b"]), brooq.InvalidArgument, "22023"),
    (lambda c: brooq.declare_topic(c, "Bad Name"), brooq.InvalidArgument, "22023"),
    (lambda c: brooq.cancel(c, None), brooq.InvalidArgument, "22004"),  # type: ignore[arg-type]
])
def test_errors_are_mapped_by_sqlstate(conn: Conn, call: Any, error: type[brooq.BrooqError],
                                       sqlstate: str) -> None:
    brooq.declare_topic(conn, "email", max_payload_bytes=1000)
    with pytest.raises(error) as raised:
        call(conn)
    assert raised.value.sqlstate == sqlstate
    assert isinstance(raised.value.__cause__, psycopg.Error)
    assert raised.value.__cause__.sqlstate == sqlstate
    assert conn.execute("select count(*) from brooq.job").fetchone() == (0,)


def test_not_json_is_refused_before_the_database(conn: Conn, topic: str) -> None:
    with pytest.raises(TypeError, match="not JSON serializable"):
        brooq.enqueue(conn, topic, {"when": object()})
    with pytest.raises(ValueError, match="JSON compliant"):
        brooq.enqueue(conn, topic, {"x": float("nan")})


def test_permission_denied_for_a_role_without_brooq_rights(conn: Conn, topic: str) -> None:
    conn.execute("drop role if exists brooq_test_nobody")
    conn.execute("create role brooq_test_nobody")
    try:
        with conn.transaction():
            conn.execute("set local role brooq_test_nobody")
            with pytest.raises(brooq.PermissionDenied) as raised:
                brooq.enqueue(conn, topic, {})
            assert raised.value.sqlstate == "42501"
            raise psycopg.Rollback()
    finally:
        conn.execute("drop role brooq_test_nobody")


def test_cancel_and_get_job(conn: Conn, topic: str) -> None:
    job = brooq.enqueue(conn, topic, {})
    assert brooq.cancel(conn, job.id) is True
    assert brooq.cancel(conn, job.id) is False  # terminal: left alone
    assert brooq.cancel(conn, 10**12) is False  # unknown
    fate = brooq.get_job(conn, job.id)
    assert fate is not None and fate.state == "canceled"
    assert brooq.get_job(conn, 10**12) is None


def test_declare_topic_sets_every_setting(conn: Conn) -> None:
    brooq.declare_topic(conn, "report", max_attempts=7, backoff_base=timedelta(seconds=2),
                        backoff_max=timedelta(minutes=5), retention=timedelta(days=1),
                        max_payload_bytes=4096, notify=False)
    row = conn.execute("select max_attempts, backoff_base, backoff_max, retention,"
                       " max_payload_bytes, notify from brooq.topic where name = 'report'").fetchone()
    assert row == (7, timedelta(seconds=2), timedelta(minutes=5), timedelta(days=1), 4096, False)


def test_topic_stats(conn: Conn, topic: str) -> None:
    brooq.enqueue_many(conn, topic, [{}, {}])
    brooq.enqueue(conn, topic, {}, delay=timedelta(hours=1))
    stats = {s.topic: s for s in brooq.topic_stats(conn)}
    s = stats[topic]
    assert (s.pending, s.ready, s.scheduled, s.processing) == (3, 2, 1, 0)
    assert s.oldest_ready_age is not None and s.oldest_ready_age >= timedelta(0)


def test_a_key_of_a_router_s_unpublished_bulk_enqueue_says_so_and_retry_finds_the_job(
        conn: Conn, topic: str) -> None:
    conn.execute("select brooq.enqueue_staged('00000000-0000-0000-0000-00000000000a', %s,"
                 " array['{}']::jsonb[], array['k'])", [topic])
    for call in (lambda: brooq.enqueue(conn, topic, {}, key="k"),
                 lambda: brooq.enqueue_many(conn, topic, [{}], keys=["k"])):
        with pytest.raises(brooq.KeyBusy) as caught:
            call()
        # was: answered with the staged job's id, whose call could still be discarded
        assert "bulk enqueue not published yet" in str(caught.value)
        assert caught.value.hint is not None and "published or discarded" in caught.value.hint
    conn.execute("select brooq.decide_staged('00000000-0000-0000-0000-00000000000a', 'publish')")
    staged = brooq.enqueue(conn, topic, {}, key="k")
    assert not staged.created
