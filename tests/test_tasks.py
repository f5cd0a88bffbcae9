"""Typed tasks (brooq.task): a producer enqueues through the task, so it names no topic and
its payload is checked against the handler's type before anything is written (a wrong
type, a missing or misspelt field raise PayloadMismatch naming the field); the same task
registered on a worker runs the job, with the topic's settings declared on the task.
Schedules declared in code (brooq.periodic, brooq.Schedule) are checked as they are
declared, and a Registry refuses what would contradict itself."""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import timedelta
from typing import Any, Literal, TypedDict

import brooq
import psycopg
import pytest
from helpers import FAST, fate, running, wait_for

Conn = psycopg.Connection[tuple[Any, ...]]


@dataclasses.dataclass
class Line:
    sku: str
    qty: int = 1


@dataclasses.dataclass
class Email:
    to: str
    subject: str
    lines: list[Line] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Invoice:
    order: int


class Reset(TypedDict):
    to: str
    kind: Literal["reset", "welcome"]


@brooq.task("email", max_attempts=4, backoff_base=timedelta(milliseconds=100), timeout=timedelta(seconds=5))
def send(job: brooq.Job, mail: Email) -> dict[str, Any]:
    return {"to": mail.to, "skus": [line.sku for line in mail.lines], "attempt": job.attempt}


@brooq.task("reset")
def reset(job: brooq.Job, r: Reset) -> str:
    return r["kind"]


@brooq.task("ping")
def ping(job: brooq.Job) -> str:
    return "pong"


def jobs(conn: Conn) -> int:
    row = conn.execute("select count(*) from brooq.jobs").fetchone()
    assert row is not None
    return int(row[0])


def test_a_task_is_its_handler_with_its_topic_settings_and_payload_type() -> None:
    assert (send.topic, send.payload_type, ping.payload_type, reset.payload_type) == ("email", Email, Any, Reset)
    assert send.topic_settings == brooq.TopicSettings(max_attempts=4, backoff_base=timedelta(milliseconds=100))
    assert send.settings.timeout == timedelta(seconds=5)
    assert send.__name__ == "send" and send.__wrapped__ is send.fn  # type: ignore[attr-defined]
    assert ping(None) == "pong"  # calling the task calls the handler
    with pytest.raises(TypeError, match="max_attemps"):
        brooq.task("x", max_attemps=3)  # a misspelt setting, at import
    with pytest.raises(brooq.InvalidArgument, match="invalid topic name 'Email'"):
        brooq.task("Email")


def test_enqueue_checks_the_payload_against_the_type_before_writing(conn: Conn) -> None:
    brooq.declare_topic(conn, "email")
    with pytest.raises(brooq.PayloadMismatch, match=r"^task email: payload does not fit Email: "
                                                   r"to: expected a string, got int \(42\)$"):
        send.enqueue(conn, Email(to=42, subject="hi"))  # type: ignore[arg-type]
    with pytest.raises(brooq.PayloadMismatch, match=r"^task email: payload does not fit Email: "
                                                   r"lines\[1\]\.qty: expected an integer, got str"):
        send.enqueue(conn, Email("a@example.com", "hi", [Line("a"), Line("b", "2")]))  # type: ignore[arg-type]
    with pytest.raises(brooq.PayloadMismatch, match=r"^task email: a Invoice payload, where the task takes Email$"):
        send.enqueue(conn, Invoice(7))  # type: ignore[arg-type]
    with pytest.raises(brooq.PayloadMismatch, match=r"^task email: payload does not fit Email: subject: missing$"):
        send.enqueue(conn, {"to": "a@example.com"})  # type: ignore[arg-type]
    assert jobs(conn) == 0  # nothing was written
    assert send.enqueue(conn, Email("a@example.com", "hi")).created
    assert send.enqueue(conn, {"to": "b@example.com", "subject": "hi"}).created  # type: ignore[arg-type]


def test_a_misspelt_field_is_refused_and_named_with_the_closest_one(conn: Conn) -> None:
    brooq.declare_topic(conn, "email")
    brooq.declare_topic(conn, "reset")
    with pytest.raises(brooq.PayloadMismatch, match=r"^task email: payload does not fit Email: "
                                                   r"subjet: not a field of Email \(did you mean subject\?\)$"):
        send.enqueue(conn, {"to": "a@example.com", "subjet": "hi", "subject": "x"})  # type: ignore[arg-type]
    with pytest.raises(brooq.PayloadMismatch, match=r"lines\[0\]\.skuu: not a field of Line \(did you mean sku\?\)"):
        send.enqueue(conn, {"to": "a", "subject": "s", "lines": [{"skuu": "a"}]})  # type: ignore[arg-type]
    with pytest.raises(brooq.PayloadMismatch, match=r"^task reset: payload does not fit Reset: "
                                                   r"knd: not a field of Reset \(did you mean kind\?\)$"):
        reset.enqueue(conn, {"to": "a", "knd": "reset"})  # type: ignore[typeddict-unknown-key]
    with pytest.raises(brooq.PayloadMismatch, match=r"kind: expected one of 'reset', 'welcome', got str"):
        reset.enqueue(conn, {"to": "a", "kind": "bye"})  # type: ignore[typeddict-item]
    assert jobs(conn) == 0
    assert reset.enqueue(conn, {"to": "a", "kind": "reset"}).created


def test_enqueue_many_names_the_payload_that_does_not_fit(conn: Conn) -> None:
    brooq.declare_topic(conn, "email")
    good = Email("a@example.com", "hi")
    with pytest.raises(brooq.PayloadMismatch, match=r"^task email: payloads\[2\]: payload does not fit Email: "
                                                   r"to: expected a string, got null"):
        send.enqueue_many(conn, [good, good, Email(None, "x")])  # type: ignore[arg-type]
    assert jobs(conn) == 0
    made = send.enqueue_many(conn, [good, good], keys=["k1", "k2"])
    assert [j.created for j in made] == [True, True]
    assert fate(conn, made[0].id).payload == {"to": "a@example.com", "subject": "hi", "lines": []}


def test_the_async_faces_check_the_same(db: str) -> None:
    async def main() -> tuple[brooq.Enqueued, list[brooq.Enqueued]]:
        async with await psycopg.AsyncConnection.connect(db, autocommit=True) as aconn:
            await brooq.aio.declare_topic(aconn, "email")
            with pytest.raises(brooq.PayloadMismatch, match="subjet: not a field of Email"):
                await send.enqueue_async(aconn, {"to": "a", "subjet": "s"})  # type: ignore[arg-type]
            one = await send.enqueue_async(aconn, Email("a", "s"), key="one")
            many = await send.enqueue_many_async(aconn, [Email("b", "s")])
            return one, many

    one, many = asyncio.run(main())
    assert one.created and len(many) == 1
    assert fate(db, one.id).topic == "email"


def test_pydantic_payloads_are_checked_too(conn: Conn) -> None:
    pydantic = pytest.importorskip("pydantic")

    class Signup(pydantic.BaseModel):  # type: ignore[misc,name-defined]
        email: str
        age: int

    def welcome(job: brooq.Job, s: Signup) -> None: ...

    welcome.__annotations__["s"] = Signup  # a local class: its name would not resolve
    task = brooq.task("signup")(welcome)
    brooq.declare_topic(conn, "signup")
    with pytest.raises(brooq.PayloadMismatch, match=r"^task signup: payload does not fit Signup: agee: not a "
                                                   r"field of Signup \(did you mean age\?\)$"):
        task.enqueue(conn, {"email": "a", "agee": 3})
    with pytest.raises(brooq.PayloadMismatch, match=r"^task signup: payload does not fit Signup: age: "):
        task.enqueue(conn, {"email": "a", "age": "old"})
    assert task.enqueue(conn, Signup(email="a", age=3)).created


def test_a_task_registered_on_a_worker_runs_its_job_with_its_settings(db: str, conn: Conn) -> None:
    worker = brooq.Worker(db, **FAST)
    worker.register(send, brooq.Registry(ping))
    assert sorted(worker.topics) == ["email", "ping"]
    with pytest.raises(TypeError, match="worker.register takes brooq.Task and brooq.Registry"):
        worker.register(lambda job: None)  # type: ignore[arg-type]
    worker.declare_topics()  # the task's settings, as the worker declares them at start
    row = conn.execute("select max_attempts, backoff_base from brooq.topics where name = 'email'").fetchone()
    assert row == (4, timedelta(milliseconds=100))
    job = send.enqueue(conn, Email("ann@example.com", "welcome", [Line("a"), Line("b", 2)]), priority=3)
    pong = ping.enqueue(conn, {})
    with running(worker):
        wait_for(lambda: fate(conn, job.id).state == "done" and fate(conn, pong.id).state == "done",
                 what="the jobs to be done")
    done = fate(conn, job.id)
    assert (done.result, done.max_attempts, done.priority) == (
        {"to": "ann@example.com", "skus": ["a", "b"], "attempt": 1}, 4, 3)
    assert fate(conn, pong.id).result == "pong"


def test_a_schedule_checks_its_payload_against_its_task_as_it_is_declared() -> None:
    with pytest.raises(brooq.PayloadMismatch, match=r"^task email: schedule digest: payload does not fit Email: "
                                                   r"subjet: not a field of Email"):
        brooq.periodic("0 3 * * *", name="digest", payload={"to": "a", "subjet": "s"})(send)
    with pytest.raises(TypeError, match=r"put it above @brooq.task"):
        brooq.periodic("0 3 * * *")(lambda job: None)  # type: ignore[arg-type]
    with pytest.raises(brooq.InvalidArgument, match="invalid schedule name 'Nightly'"):
        brooq.Schedule("Nightly", "0 3 * * *", "report")
    with pytest.raises(brooq.InvalidArgument, match="ticker 'cron' is none of pg_cron, workers, None"):
        brooq.Schedule("nightly", "0 3 * * *", "report", ticker="cron")

    @brooq.periodic("*/5 * * * *", name="ping.often")
    @brooq.periodic("0 * * * *", payload={"hourly": True}, priority=2)
    @brooq.task("ping.sched")
    def pinged(job: brooq.Job) -> None: ...

    assert [(s.name, s.cron, s.topic, s.payload, s.priority) for s in pinged.schedules] == [
        ("ping.sched", "0 * * * *", "ping.sched", {"hourly": True}, 2),
        ("ping.often", "*/5 * * * *", "ping.sched", {}, 0)]


def test_a_registry_refuses_what_contradicts_itself() -> None:
    registry = brooq.Registry(send)
    registry.add(send)  # the same task again: nothing new

    @brooq.task("email")
    def other(job: brooq.Job) -> None: ...

    with pytest.raises(ValueError, match=r"topic email has two tasks: test_tasks.send and .*other"):
        registry.add(other)
    with pytest.raises(ValueError, match="topic email is declared twice, with other settings"):
        registry.topic("email", max_attempts=1)
    registry.topic("audit", retention=timedelta(days=90))
    registry.schedule("audit.daily", "0 0 * * *", "audit")
    with pytest.raises(ValueError, match="schedule audit.daily is declared twice"):
        registry.schedule("audit.daily", "0 1 * * *", "audit")
    registry.schedule("typo", "0 0 * * *", "adit")
    with pytest.raises(brooq.InvalidArgument, match="schedule typo: its topic adit is neither a task's nor a topic"):
        registry.check()
    assert list(registry.topics()) == ["audit", "email"]
    assert [t.topic for t in registry.tasks] == ["email"]
