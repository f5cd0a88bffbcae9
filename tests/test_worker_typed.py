"""Typed payloads: a handler's payload parameter annotated with a dataclass, a TypedDict
or a pydantic model gets the payload decoded and validated; a payload that does not fit
goes dead at once (one attempt, settled with the outcome dead) with a message naming
the field."""

from __future__ import annotations

import dataclasses
import logging
from datetime import timedelta
from typing import Any, Literal, TypedDict

import brooq
import psycopg
import pytest
from brooq.typed import PayloadMismatch, decoder_of
from helpers import FAST, fate, running, wait_for

Conn = psycopg.Connection[tuple[Any, ...]]


@dataclasses.dataclass
class Item:
    sku: str
    qty: int = 1


@dataclasses.dataclass
class Order:
    id: int
    items: list[Item]
    note: str | None = None


class Mail(TypedDict):
    to: str
    kind: Literal["welcome", "reset"]


def decode(tp: Any, payload: Any) -> Any:
    def handler(job: brooq.Job, payload: tp) -> None:  # type: ignore[valid-type]
        pass
    handler.__annotations__["payload"] = tp
    d = decoder_of(handler)
    assert d is not None
    return d(payload)


def test_decoding_names_the_field_that_does_not_fit() -> None:
    assert decode(Order, {"id": 1, "items": [{"sku": "a"}], "extra": 0}) == Order(1, [Item("a", 1)])
    with pytest.raises(PayloadMismatch, match=r"^payload does not fit Order: items\[1\]\.sku: "
                                              r"expected a string, got int \(7\)$"):
        decode(Order, {"id": 1, "items": [{"sku": "a"}, {"sku": 7}]})
    with pytest.raises(PayloadMismatch, match="^payload does not fit Order: id: missing$"):
        decode(Order, {"items": []})
    with pytest.raises(PayloadMismatch, match="id: expected an integer, got bool"):
        decode(Order, {"id": True, "items": []})
    assert decode(Mail, {"to": "a@b", "kind": "reset"}) == {"to": "a@b", "kind": "reset"}
    with pytest.raises(PayloadMismatch, match=r"^payload does not fit Mail: kind: expected one of "
                                              r"'welcome', 'reset', got str \('bye'\)$"):
        decode(Mail, {"to": "a@b", "kind": "bye"})
    with pytest.raises(PayloadMismatch, match="payload does not fit Mail: the payload: expected an object"):
        decode(Mail, [1])


def test_pydantic_models_are_validated_by_pydantic() -> None:
    pydantic = pytest.importorskip("pydantic")

    class Charge(pydantic.BaseModel):  # type: ignore[name-defined,misc]
        amount: int
        currency: str = "EUR"

    assert decode(Charge, {"amount": 5}) == Charge(amount=5)
    with pytest.raises(PayloadMismatch, match="^payload does not fit Charge: amount: "):
        decode(Charge, {"amount": "five"})


def test_a_typed_handler_gets_its_payload_decoded_and_a_bad_one_goes_dead_at_once(
        db: str, conn: Conn, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="brooq")
    worker = brooq.Worker(db, **FAST)
    got: list[Any] = []

    @worker.handler("orders", max_attempts=5, backoff_base=timedelta(minutes=5), backoff_max=timedelta(minutes=5))
    def orders(job: brooq.Job, order: Order) -> Any:
        got.append(order)
        return {"items": len(order.items)}

    @worker.handler("mail", backoff_base=timedelta(minutes=5), backoff_max=timedelta(minutes=5))
    async def mail(job: brooq.Job, m: Mail) -> Any:
        return m["kind"]

    worker.declare_topics()
    good = brooq.enqueue(conn, "orders", Order(7, [Item("a"), Item("b", 2)])).id  # a dataclass
    bad = brooq.enqueue(conn, "orders", {"id": 8, "items": [{"qty": 1}]}).id
    typed_dict = brooq.enqueue(conn, "mail", Mail(to="a@b", kind="welcome")).id
    bad_mail = brooq.enqueue(conn, "mail", {"to": "a@b"}).id
    with running(worker):
        done = {i: wait_for(lambda i=i: fate(conn, i).state in ("done", "dead") and fate(conn, i),
                            what=f"job {i}") for i in (good, bad, typed_dict, bad_mail)}
    assert got == [Order(7, [Item("a", 1), Item("b", 2)])]
    assert (done[good].state, done[good].result) == ("done", {"items": 2})
    assert (done[typed_dict].state, done[typed_dict].result) == ("done", "welcome")
    # dead after exactly one attempt of five: a payload that does not fit never will
    b = done[bad]
    assert (b.state, b.attempts, b.max_attempts) == ("dead", 1, 5)
    assert b.last_error == "payload does not fit Order: items[0].sku: missing"
    bm = done[bad_mail]
    assert (bm.state, bm.attempts, bm.last_error) == ("dead", 1, "payload does not fit Mail: kind: missing")
    topics = worker.snapshot().topics
    assert (topics["orders"].dead, topics["orders"].failed, topics["orders"].retried) == (1, 0, 0)
    # logged once, at ERROR, with the reason (and no attempt line before it)
    about_bad = [(r.levelno, r.getMessage()) for r in caplog.records if f"job {bad} " in r.getMessage()]
    dead_line = f"job {bad} (orders) is dead after attempt 1/5: payload does not fit Order: items[0].sku: missing"
    assert about_bad == [(logging.ERROR, dead_line)]


def test_producers_enqueue_pydantic_models(db: str, conn: Conn) -> None:
    pydantic = pytest.importorskip("pydantic")

    class Charge(pydantic.BaseModel):  # type: ignore[name-defined,misc]
        amount: int
        when: Any = None

    brooq.declare_topic(conn, "charge")
    job = brooq.enqueue(conn, "charge", Charge(amount=3))
    assert fate(conn, job.id).state == "pending"
    row = conn.execute("select payload from brooq.job where id = %s", [job.id]).fetchone()
    assert row == ({"amount": 3, "when": None},)
