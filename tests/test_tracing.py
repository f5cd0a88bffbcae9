"""OpenTelemetry (brooq.tracing): a real worker and real producers in a fresh
interpreter with opentelemetry-sdk's in-memory exporter as the tracer provider, against
the throwaway PostgreSQL. The spans it finished are read back as JSON and checked:

- an enqueue under a parent span carries the trace context IN THE JOB (not in the
  payload), and the attempt's span is in the same trace, a child of the enqueue span;
- a handler's own spans are children of the attempt's; a chained job continues the trace;
- a failed attempt has status ERROR and the exception recorded; a Retry has no exception;
  a timed-out one says so (brooq.stopped);
- a job enqueued by plain SQL (no context) gets a root span of its own;
- aio.enqueue and enqueue_many are traced too.

Each run takes ~3 s (one interpreter for every scenario)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

SCRIPT = r"""
import asyncio, json, sys, threading, time
from datetime import timedelta

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)
app = trace.get_tracer("app")

import psycopg
import brooq
from brooq import aio

dsn = sys.argv[1]
worker = brooq.Worker(dsn, lease=timedelta(seconds=5), poll_interval=timedelta(milliseconds=50))

@worker.handler("t.ok")
def ok(job):
    with app.start_as_current_span("inside the handler"):
        if job.payload.get("chain"):
            job.chain("t.chained", {"from": job.id})
    return {"ok": job.id}

@worker.handler("t.chained")
def chained(job):
    return None

@worker.handler("t.fail", max_attempts=2, backoff_base=timedelta(milliseconds=10),
                backoff_max=timedelta(milliseconds=10))
def fail(job):
    if job.payload.get("retry") and job.attempt == 1:
        raise brooq.Retry(reason="not yet")
    raise ValueError("boom " + str(job.attempt))

@worker.handler("t.slow", max_attempts=1, timeout=timedelta(milliseconds=200))
def slow(job):
    job.canceled.wait(10)  # told to stop at the timeout
    return None

@worker.handler("t.async")
async def in_async(job):
    with app.start_as_current_span("inside the async handler"):
        await asyncio.sleep(0)
    return None

worker.declare_topics()
ids = {}
with psycopg.connect(dsn, autocommit=True) as conn:
    with app.start_as_current_span("request") as request:
        ids["request"] = format(request.get_span_context().span_id, "016x")
        ids["ok"] = brooq.enqueue(conn, "t.ok", {"chain": True}).id
        ids["many"] = [e.id for e in brooq.enqueue_many(conn, "t.ok", [{"n": 1}, {"n": 2}])]
        ids["fail"] = brooq.enqueue(conn, "t.fail", {}).id
        ids["retry"] = brooq.enqueue(conn, "t.fail", {"retry": True}).id
        ids["slow"] = brooq.enqueue(conn, "t.slow", {}).id

        async def produce():
            async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as aconn:
                return (await aio.enqueue(aconn, "t.async", {})).id

        ids["async"] = asyncio.run(produce())
    ids["sql"] = conn.execute("select id from brooq.enqueue('t.ok', '{\"sql\": true}')").fetchone()[0]
    rows = conn.execute("select id, payload, trace_context from brooq.job order by id").fetchall()
    ids["rows"] = {str(i): {"payload": p, "trace_context": c} for i, p, c in rows}

    def stop_when_settled():
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            left = conn.execute("select count(*) from brooq.job "
                                "where state not in ('done', 'dead')").fetchone()[0]
            if left == 0 and conn.execute("select count(*) from brooq.job").fetchone()[0] >= 9:
                break
            time.sleep(0.05)
        worker.stop()

    threading.Thread(target=stop_when_settled).start()
    worker.run()
    ids["states"] = dict(conn.execute("select id::text, state from brooq.job").fetchall())
    ids["chained"] = conn.execute("select id from brooq.job where topic = 't.chained'").fetchone()[0]

spans = []
for s in exporter.get_finished_spans():
    spans.append({
        "name": s.name, "kind": s.kind.name,
        "trace_id": format(s.context.trace_id, "032x"), "span_id": format(s.context.span_id, "016x"),
        "parent": None if s.parent is None else format(s.parent.span_id, "016x"),
        "attributes": dict(s.attributes or {}), "status": s.status.status_code.name,
        "description": s.status.description,
        "events": [{"name": e.name, "attributes": dict(e.attributes or {})} for e in s.events],
    })
print(json.dumps({"ids": ids, "spans": spans}, default=str))
"""


@pytest.fixture(scope="module")
def run(server: Any, template_db: str) -> Iterator[dict[str, Any]]:
    name = f"brooq_t_{uuid.uuid4().hex[:12]}"
    dsn = server.create_db(name, template=template_db)
    done = subprocess.run([sys.executable, "-c", SCRIPT, dsn], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    yield json.loads(done.stdout)


def spans_of(run: dict[str, Any], name: str, job_id: int | None = None) -> list[dict[str, Any]]:
    return [s for s in run["spans"] if s["name"] == name
            and (job_id is None or s["attributes"].get("brooq.job.id") == job_id)]


def test_the_trace_context_travels_in_the_job_not_in_the_payload(run: dict[str, Any]) -> None:
    ids, rows = run["ids"], run["ids"]["rows"]
    job = rows[str(ids["ok"])]
    assert job["payload"] == {"chain": True}  # untouched: invariant 5 (docs/architecture.md)
    (enqueue,) = spans_of(run, "enqueue t.ok", ids["ok"])
    assert list(job["trace_context"]) == ["traceparent"]  # no tracestate was set
    assert job["trace_context"]["traceparent"].startswith(
        f"00-{enqueue['trace_id']}-{enqueue['span_id']}-")  # then the flags (sampled)
    assert rows[str(ids["sql"])]["trace_context"] is None  # plain SQL: no context


def test_the_attempt_is_a_child_of_the_enqueue_in_the_same_trace(run: dict[str, Any]) -> None:
    ids = run["ids"]
    (request,) = spans_of(run, "request")
    (enqueue,) = spans_of(run, "enqueue t.ok", ids["ok"])
    (attempt,) = spans_of(run, "process t.ok", ids["ok"])
    assert enqueue["kind"] == "PRODUCER" and enqueue["parent"] == request["span_id"]
    assert enqueue["attributes"]["messaging.destination.name"] == "t.ok"
    assert enqueue["attributes"]["messaging.system"] == "brooq"
    assert attempt["kind"] == "CONSUMER"
    assert attempt["trace_id"] == request["trace_id"]
    assert attempt["parent"] == enqueue["span_id"]
    assert attempt["attributes"]["brooq.attempt"] == 1
    assert attempt["attributes"]["brooq.outcome"] == "done"
    assert attempt["attributes"]["messaging.destination.name"] == "t.ok"
    assert attempt["status"] == "UNSET"
    (inside,) = [s for s in spans_of(run, "inside the handler")
                 if s["parent"] == attempt["span_id"]]
    assert inside["trace_id"] == request["trace_id"]


def test_a_chained_job_continues_the_trace(run: dict[str, Any]) -> None:
    ids = run["ids"]
    (attempt,) = spans_of(run, "process t.ok", ids["ok"])
    (chained,) = spans_of(run, "process t.chained", ids["chained"])
    assert chained["trace_id"] == attempt["trace_id"]
    inside = [s["span_id"] for s in spans_of(run, "inside the handler")
              if s["parent"] == attempt["span_id"]]
    assert chained["parent"] in inside  # Job.chain was called in the handler's own span


def test_enqueue_many_is_one_span_for_the_batch(run: dict[str, Any]) -> None:
    ids = run["ids"]
    (batch,) = spans_of(run, "enqueue_many t.ok")
    assert batch["attributes"]["messaging.batch.message_count"] == 2
    for job_id in ids["many"]:
        (attempt,) = spans_of(run, "process t.ok", job_id)
        assert attempt["parent"] == batch["span_id"]
        assert attempt["trace_id"] == batch["trace_id"]


def test_aio_enqueue_and_an_async_handler_are_traced(run: dict[str, Any]) -> None:
    ids = run["ids"]
    (request,) = spans_of(run, "request")
    (enqueue,) = spans_of(run, "enqueue t.async", ids["async"])
    (attempt,) = spans_of(run, "process t.async", ids["async"])
    assert enqueue["parent"] == request["span_id"]
    assert attempt["parent"] == enqueue["span_id"]
    (inside,) = spans_of(run, "inside the async handler")
    assert inside["parent"] == attempt["span_id"]


def test_failed_attempts_record_the_error(run: dict[str, Any]) -> None:
    ids = run["ids"]
    (enqueue,) = spans_of(run, "enqueue t.fail", ids["fail"])
    attempts = sorted(spans_of(run, "process t.fail", ids["fail"]),
                      key=lambda s: s["attributes"]["brooq.attempt"])
    assert [a["attributes"]["brooq.attempt"] for a in attempts] == [1, 2]
    assert run["ids"]["states"][str(ids["fail"])] == "dead"
    for n, a in enumerate(attempts, 1):
        assert a["parent"] == enqueue["span_id"]  # every attempt is a child of the enqueue
        assert a["status"] == "ERROR"
        assert a["description"] == f"ValueError: boom {n}"
        assert a["attributes"]["brooq.outcome"] == "failed"
        (event,) = a["events"]
        assert event["name"] == "exception"
        assert event["attributes"]["exception.type"] == "ValueError"
        assert event["attributes"]["exception.message"] == f"boom {n}"


def test_a_retry_is_a_failed_attempt_without_an_exception(run: dict[str, Any]) -> None:
    ids = run["ids"]
    first = [a for a in spans_of(run, "process t.fail", ids["retry"])
             if a["attributes"]["brooq.attempt"] == 1]
    (a,) = first
    assert a["status"] == "ERROR" and a["description"] == "Retry: not yet"
    assert a["events"] == []  # a signal, not an exception


def test_a_job_enqueued_by_sql_without_context_gets_a_root_span(run: dict[str, Any]) -> None:
    ids = run["ids"]
    (attempt,) = spans_of(run, "process t.ok", ids["sql"])
    assert attempt["parent"] is None
    (request,) = spans_of(run, "request")
    assert attempt["trace_id"] != request["trace_id"]
    assert attempt["attributes"]["brooq.outcome"] == "done"


def test_a_bad_trace_context_from_sql_is_refused(conn: psycopg.Connection[Any]) -> None:
    conn.execute("select brooq.declare_topic('t.sql')")
    with pytest.raises(psycopg.errors.InvalidParameterValue) as caught:
        conn.execute("select brooq.enqueue('t.sql', '{}', trace_context => '{\"traceparent\": \"x\"}')")
    assert "is not a W3C trace context" in str(caught.value)
    assert conn.execute("select count(*) from brooq.job").fetchone() == (0,)


def test_without_a_tracer_provider_nothing_is_traced(db: str) -> None:
    """opentelemetry imported but no provider set: no context stored, no error."""
    code = textwrap.dedent(f"""
        import opentelemetry.trace, psycopg, brooq
        with psycopg.connect({db!r}, autocommit=True) as conn:
            conn.execute("select brooq.declare_topic('t.none')")
            job = brooq.enqueue(conn, "t.none", {{}})
            print(conn.execute("select trace_context is null from brooq.job where id = %s",
                               [job.id]).fetchone()[0])
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"


def test_a_timed_out_attempt_is_an_error_that_says_why(run: dict[str, Any]) -> None:
    ids = run["ids"]
    (attempt,) = spans_of(run, "process t.slow", ids["slow"])
    assert attempt["attributes"]["brooq.stopped"] == "timeout"
    assert attempt["attributes"]["brooq.outcome"] == "failed"  # whatever the handler returned
    assert attempt["status"] == "ERROR" and attempt["description"] == "timed out"
    assert run["ids"]["states"][str(ids["slow"])] == "dead"
