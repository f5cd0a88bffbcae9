"""Hypothesis fuzz of brooq's producer-facing SQL: enqueue, enqueue_many, declare_topic.

Malformed input (odd topic names, NULLs, oversize and deeply nested payloads,
text that is not JSON, infinite instants, huge and negative durations, integer
bounds) goes in as query parameters, never by building SQL. Every call must
either succeed or fail with a documented SQLSTATE (never a syntax error, P0001
or an internal error), and a failed call must leave brooq.job and brooq.topic
exactly as they were. Where the input is plainly valid or plainly invalid, the
outcome must match; a call that succeeds is checked against what it stored.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import psycopg
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

Conn = psycopg.Connection[tuple[Any, ...]]

# What brooq (or the cast of a parameter to its declared type) may raise.
DOCUMENTED = {
    "22004",  # null_value_not_allowed: a NULL where a value is required
    "22023",  # invalid_parameter_value: a bad name, setting, key, instant or delay
    "42704",  # undefined_object: the topic was not declared
    "54000",  # program_limit_exceeded: a payload larger than the topic allows
    "22P02",  # invalid_text_representation: payload text that is not JSON (the ::jsonb cast)
    "22008",  # datetime_field_overflow: now + delay beyond the range of timestamptz
    "54001",  # statement_too_complex: JSON nested deeper than max_stack_depth lets the parser go
    "22P05",  # untranslatable_character: the JSON escape \u0000 (jsonb text cannot hold NUL)
}

SMALL_LIMIT = 100  # max_payload_bytes of the topic "small"
DECLARED = {"fuzz": 1048576, "small": SMALL_LIMIT}  # topic -> max_payload_bytes
NAME = re.compile(r"[a-z0-9._-]{1,128}")
INT_MIN, INT_MAX = -(2**31), 2**31 - 1
MICROS_PER_DAY = 86_400_000_000
# declare_topic refuses durations longer than this (22023): a longer backoff or
# retention would overflow timestamptz in settle or purge.
MAX_DURATION_DAYS = 100 * 12 * 30  # '100 years' as PostgreSQL compares intervals

FUZZ = settings(max_examples=250, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.large_base_example])


def snapshot(conn: Conn) -> tuple[Any, ...]:
    """Count and checksum of every row of brooq.job and brooq.topic."""
    row = conn.execute(
        "select (select count(*) from brooq.job),"
        "       (select md5(coalesce(string_agg(j::text, e'\\n' order by j.id), '')) from brooq.job j),"
        "       (select count(*) from brooq.topic),"
        "       (select md5(coalesce(string_agg(t::text, e'\\n' order by t.name), '')) from brooq.topic t)"
    ).fetchone()
    assert row is not None
    return tuple(row)


def attempt(conn: Conn, query: str, params: dict[str, Any]) -> tuple[list[tuple[Any, ...]] | None, str | None]:
    """Run one call: (rows, None) on success, (None, sqlstate) on a documented error.

    A failure must carry a documented SQLSTATE and must have written nothing.
    """
    before = snapshot(conn)
    try:
        rows = conn.execute(query, params).fetchall()
    except psycopg.Error as exc:
        assert exc.sqlstate in DOCUMENTED, f"undocumented {exc.sqlstate}: {exc}\nparams: {short(params)}"
        assert snapshot(conn) == before, f"a failed call ({exc.sqlstate}) changed the tables"
        return None, exc.sqlstate
    return rows, None


def short(params: dict[str, Any]) -> str:
    return repr({k: (v[:80] + "..." if isinstance(v, str) and len(v) > 80 else v)
                 for k, v in params.items()})


# strategies ---------------------------------------------------------------------------

def mostly(strategy: st.SearchStrategy[Any], odd: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """strategy about three times out of four, odd otherwise (one_of would not weight them)."""
    return st.sampled_from([1, 2, 3, 0]).flatmap(lambda i: odd if i == 0 else strategy)


odd_text = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), max_size=60)
control_text = st.text(st.characters(min_codepoint=1, max_codepoint=31), min_size=1, max_size=10)
valid_name = st.from_regex(NAME, fullmatch=True)
topic_names = st.one_of(
    st.sampled_from(sorted(DECLARED)),
    valid_name,
    st.from_regex(r"[a-z0-9._-]{0,20}[A-Z][A-Za-z0-9._-]{0,20}", fullmatch=True),
    odd_text,
    control_text,
    st.sampled_from(["", " ", "fuzz ", " fuzz", "FUZZ", "fuzz\n", "fü", "a/b", "a" * 128, "a" * 129]),
    st.text("abc.-_09", min_size=129, max_size=400),
    st.none(),
)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | odd_text,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(odd_text, inner, max_size=5),
    max_leaves=25,
)


@dataclass(frozen=True)
class Payload:
    text: str | None
    kind: str  # json | deep | huge | notjson | nul | none


def nested(depth: int, brace: bool) -> str:
    return ('{"a":' * depth + "1" + "}" * depth) if brace else ("[" * depth + "]" * depth)


payloads = st.one_of(
    st.builds(lambda v, ascii_: Payload(json.dumps(v, ensure_ascii=ascii_), "json"), json_values, st.booleans()),
    st.builds(lambda n: Payload(json.dumps("x" * n), "json"), st.integers(SMALL_LIMIT - 20, SMALL_LIMIT + 20)),
    st.builds(lambda d, b: Payload(nested(d, b), "deep"), st.integers(1, 20_000), st.booleans()),
    st.builds(lambda n: Payload(json.dumps("x" * n), "huge"), st.integers(1_048_577, 1_100_000)),
    st.builds(lambda s: Payload(s, "notjson"), odd_text.filter(lambda s: not is_json(s))),
    st.sampled_from([Payload('"\\u0000"', "nul"), Payload('{"a": "x\\u0000y"}', "nul"),
                     Payload("", "notjson"), Payload("NaN", "notjson"), Payload("{", "notjson"),
                     Payload("[1,]", "notjson"), Payload("'x'", "notjson"), Payload(None, "none")]),
)
json_payloads = st.builds(lambda v: Payload(json.dumps(v), "json"), json_values)
declared = st.sampled_from(sorted(DECLARED))


def is_json(text: str) -> bool:
    def refuse(_: str) -> Any:
        raise ValueError
    try:
        json.loads(text, parse_constant=refuse)
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class Instant:
    text: str | None
    finite: bool
    in_range: bool  # within what python's datetime can hold (years 1-9999)


instants = st.one_of(
    st.none().map(lambda _: Instant(None, True, True)),
    st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.just(UTC))
      .map(lambda d: Instant(d.isoformat(), True, True)),
    st.sampled_from([Instant("infinity", False, False), Instant("-infinity", False, False),
                     Instant("294276-12-31 23:59:59+00", True, False),
                     Instant("4713-11-24 00:00:00+00 BC", True, False)]),
)


@dataclass(frozen=True)
class Duration:
    """An interval as text, and its length as PostgreSQL compares intervals (1 mon = 30 days)."""

    text: str | None
    micros: int  # meaningless when text is None
    largest_part: int = 0  # the largest of |months|, |days|, |time| in microseconds
    negative_part: bool = False  # months, days or time below zero


def duration(months: int, days: int, micros: int) -> Duration:
    return Duration(f"{months} mons {days} days {micros} microseconds",
                    (months * 30 + days) * MICROS_PER_DAY + micros,
                    max(abs(months) * 30 * MICROS_PER_DAY, abs(days) * MICROS_PER_DAY, abs(micros)),
                    months < 0 or days < 0 or micros < 0)


durations = st.one_of(
    st.builds(duration, st.just(0), st.integers(-400, 400), st.integers(-MICROS_PER_DAY, MICROS_PER_DAY)),
    st.builds(duration, st.integers(-1200, 1200), st.integers(-40_000, 40_000), st.integers(-10**15, 10**15)),
    st.builds(duration, st.integers(-2 * 10**9, 2 * 10**9), st.integers(INT_MIN, INT_MAX),
              st.integers(-10**17, 10**17)),
    st.sampled_from([duration(0, 0, 0), duration(0, 0, 1), duration(0, 0, -1),
                     duration(1200, 0, 0), duration(1200, 0, 1), duration(178_000_000 * 12, 0, 0),
                     duration(-178_000_000 * 12, 0, 0), duration(70_000_000, -2_099_999_999, 0),
                     duration(-70_000_000, 2_100_000_001, 0), Duration(None, 0)]),
)
no_instant = st.just(Instant(None, True, True))
no_duration = st.just(Duration(None, 0))
ints = st.one_of(st.sampled_from([INT_MIN, INT_MAX, -1, 0, 1]), st.integers(INT_MIN, INT_MAX))

# Settings that are mostly valid, so that whole declarations often are.
attempt_counts = mostly(st.integers(1, 1000), st.sampled_from([0, 1001]) | ints | st.none())
payload_limits = mostly(st.integers(1, 268435455), st.sampled_from([0, 268435456]) | ints | st.none())
sane_durations = st.one_of(
    st.builds(duration, st.just(0), st.integers(0, 400), st.integers(1, MICROS_PER_DAY)),
    st.builds(duration, st.integers(0, 1200), st.integers(0, 36_000), st.integers(0, 10**15)),
)
setting_durations = mostly(sane_durations, durations)
keys = st.one_of(st.none(), st.just(""), odd_text, control_text,
                 st.sampled_from(["k" * 255, "k" * 256, "é" * 255, "é" * 256]))


# enqueue ------------------------------------------------------------------------------

def declare_fuzz_topics(conn: Conn) -> None:
    for name, limit in DECLARED.items():
        conn.execute("select brooq.declare_topic(%s, max_payload_bytes => %s)", (name, limit))


def payload_size(conn: Conn, payload: Payload) -> int | None:
    """Bytes of the payload's JSON text as PostgreSQL prints it, when it parses."""
    if payload.kind != "json":
        return None
    row = conn.execute("select octet_length(%s::jsonb::text)", (payload.text,)).fetchone()
    assert row is not None
    return int(row[0])


def must_fail(topic: str | None, payload: Payload, key: str | None, at: Instant,
              delay: Duration, priority: int | None) -> bool:
    return (topic is None or payload.kind in ("none", "notjson", "nul", "huge") or priority is None
            or topic not in DECLARED or (key is not None and len(key) > 255)
            or not at.finite or (at.text is not None and delay.text is not None)
            or (at.text is not None and not at.in_range)  # a client could not read it back
            or (delay.text is not None and (delay.micros < 0 or delay.negative_part
                                            or delay.micros > 100 * 360 * MICROS_PER_DAY)))


def must_succeed(size: int | None, topic: str | None, payload: Payload, key: str | None,
                 at: Instant, delay: Duration, priority: int | None) -> bool:
    return (not must_fail(topic, payload, key, at, delay, priority) and payload.kind == "json"
            and size is not None and size <= DECLARED[topic or ""] and at.in_range
            and (delay.text is None or delay.largest_part < 1000 * 365 * MICROS_PER_DAY))


ENQUEUE = ("select id, created from brooq.enqueue(topic => %(topic)s::text, payload => %(payload)s::jsonb,"
           " idempotency_key => %(key)s::text, available_at => %(at)s::timestamptz,"
           " priority => %(priority)s::integer, delay => %(delay)s::interval)")


@FUZZ
@given(topic=mostly(declared, topic_names), payload=mostly(json_payloads, payloads), key=keys,
       at=mostly(no_instant, instants), delay=mostly(no_duration, durations),
       priority=mostly(ints, st.none()))
def test_enqueue_fuzz(conn: Conn, topic: str | None, payload: Payload, key: str | None,
                      at: Instant, delay: Duration, priority: int | None) -> None:
    if snapshot(conn)[2] == 0:
        declare_fuzz_topics(conn)
    size = payload_size(conn, payload)
    jobs_before = snapshot(conn)[0]
    params = {"topic": topic, "payload": payload.text, "key": key, "at": at.text,
              "priority": priority, "delay": delay.text}
    rows, state = attempt(conn, ENQUEUE, params)
    event(f"enqueue: {state or 'ok'}")

    if rows is None:
        assert not must_succeed(size, topic, payload, key, at, delay, priority), \
            f"valid enqueue refused with {state}: {short(params)}"
        if payload.kind == "huge" and topic in DECLARED and priority is not None and at.finite:
            assert state in ("54000", "22023"), state
        return
    assert not must_fail(topic, payload, key, at, delay, priority), f"bad enqueue accepted: {short(params)}"
    assert len(rows) == 1
    job, created = rows[0]
    stored = conn.execute(
        "select topic, payload = %s::jsonb, idempotency_key, priority, state, attempts,"
        " available_at = coalesce(%s::timestamptz, available_at) from brooq.job where id = %s",
        (payload.text, at.text, job)).fetchone()
    assert stored is not None, "enqueue returned an id that is not in brooq.job"
    key_stored = key or None
    assert snapshot(conn)[0] == jobs_before + (1 if created else 0)
    assert stored[0] == topic and stored[2] == key_stored
    if created:
        assert stored[1:] == (True, key_stored, priority, "pending", 0, True), stored
    else:
        assert key_stored is not None, "created = false without an idempotency key"


ENQUEUE_MANY = ("select id, created from brooq.enqueue_many(topic => %(topic)s::text,"
                " payloads => %(payloads)s::text[]::jsonb[], idempotency_keys => %(keys)s::text[],"
                " available_at => %(at)s::timestamptz, priority => %(priority)s::integer,"
                " delay => %(delay)s::interval)")


@FUZZ
@given(topic=mostly(declared, topic_names),
       batch=st.lists(st.tuples(mostly(json_payloads, payloads), keys), max_size=6),
       keys_given=mostly(st.sampled_from(["all", "none"]), st.sampled_from(["short", "long"])),
       at=mostly(no_instant, instants), delay=mostly(no_duration, durations),
       priority=mostly(ints, st.none()), payloads_null=mostly(st.just(False), st.just(True)))
def test_enqueue_many_fuzz(conn: Conn, topic: str | None, batch: list[tuple[Payload, str | None]],
                           keys_given: str, at: Instant, delay: Duration, priority: int | None,
                           payloads_null: bool) -> None:
    if snapshot(conn)[2] == 0:
        declare_fuzz_topics(conn)
    texts = None if payloads_null else [p.text for p, _ in batch]
    key_list: list[str | None] | None = {
        "all": [k for _, k in batch], "none": None,
        "short": [k for _, k in batch][:-1], "long": [k for _, k in batch] + ["extra"]}[keys_given]
    sizes = [payload_size(conn, p) for p, _ in batch]
    jobs_before = snapshot(conn)[0]
    params = {"topic": topic, "payloads": texts, "keys": key_list, "at": at.text,
              "priority": priority, "delay": delay.text}
    rows, state = attempt(conn, ENQUEUE_MANY, params)
    event(f"enqueue_many: {state or 'ok'}")

    effective_keys: list[str | None] = [k for _, k in batch] if keys_given == "all" else [None] * len(batch)
    bad_element = any(must_fail(topic, p, k, at, delay, priority) for (p, _), k in zip(batch, effective_keys))
    bad_call = (texts is None or topic is None or priority is None or topic not in DECLARED
                or (key_list is not None and len(key_list) != len(batch)) or not at.finite
                or (at.text is not None and delay.text is not None)
                or (delay.text is not None and delay.micros < 0))
    if rows is None:
        fine = not bad_call and must_succeed(2, topic, Payload("{}", "json"), None, at, delay, priority) and all(
            must_succeed(s, topic, p, k, at, delay, priority)
            for (p, _), k, s in zip(batch, effective_keys, sizes))
        assert not fine, f"valid enqueue_many refused with {state}: {short(params)}"
        return
    assert not bad_call and not bad_element, f"bad enqueue_many accepted: {short(params)}"
    assert len(rows) == len(batch), "not one result per payload"
    created = [c for _, c in rows]
    assert snapshot(conn)[0] == jobs_before + sum(created)
    first: dict[str, int] = {}
    for (job, was_created), (payload, _), key in zip(rows, batch, effective_keys):
        stored = conn.execute("select payload = %s::jsonb, idempotency_key, topic from brooq.job where id = %s",
                              (payload.text, job)).fetchone()
        assert stored is not None
        assert stored[2] == topic and stored[1] == (key or None)
        if was_created:
            assert stored[0] is True, "the stored payload differs from the one given"
        else:
            assert key, "created = false without an idempotency key"
        if key:
            assert first.setdefault(key, job) == job, "one key, two ids in one batch"


# declare_topic ------------------------------------------------------------------------

DECLARE = ("select name, max_attempts, backoff_base = %(base)s::interval, backoff_max = %(max)s::interval,"
           " retention = %(retention)s::interval, max_payload_bytes, notify"
           " from brooq.declare_topic(name => %(name)s::text, max_attempts => %(attempts)s::integer,"
           " backoff_base => %(base)s::interval, backoff_max => %(max)s::interval,"
           " retention => %(retention)s::interval, max_payload_bytes => %(bytes)s::integer,"
           " notify => %(notify)s::boolean)")


def declaration_valid(name: str | None, attempts: int | None, base: Duration, max_: Duration,
                      retention: Duration, size: int | None, notify: bool | None) -> bool | None:
    """Whether declare_topic must accept these settings; None when it may go either way."""
    if None in (name, attempts, base.text, max_.text, retention.text, size, notify):
        return False
    assert name is not None and attempts is not None and size is not None
    limit = MAX_DURATION_DAYS * MICROS_PER_DAY
    valid = (NAME.fullmatch(name) is not None and 1 <= attempts <= 1000
             and 0 < base.micros <= limit and base.micros <= max_.micros <= limit
             and 0 <= retention.micros <= limit and 1 <= size <= 268435455)
    if valid and max(base.largest_part, max_.largest_part, retention.largest_part) > 1000 * limit:
        return None  # parts that cancel out: now + it may overflow (refused), or not
    return valid


def prove_usable(conn: Conn, name: str) -> None:
    """A declared topic works end to end: enqueue, claim, each retry outcome, purge.

    Inside a transaction that is rolled back, so the fuzz keeps its tables small.
    Each settle computes an instant from the topic's backoff; purge from its retention.
    """
    with conn.transaction(force_rollback=True):
        # max_payload_bytes may be below the size of '{}' (8 bytes): not the point here.
        conn.execute("update brooq.topic set max_payload_bytes = 1000 where name = %s", (name,))
        row = conn.execute("select id from brooq.enqueue(%s, '{}')", (name,)).fetchone()
        assert row is not None
        job = row[0]
        for outcome, delay in (("failed", None), ("delay", "1000000 years"), ("preserve", None)):
            conn.execute("update brooq.job set state = 'pending', attempts = 0,"
                         " available_at = '-infinity' where id = %s", (job,))
            claimed = conn.execute("select lease_token from brooq.claim('fuzz', array[%s])", (name,)).fetchone()
            assert claimed is not None, f"a job of topic {name!r} could not be claimed"
            settled = conn.execute("select brooq.settle(%s, 'fuzz', %s, %s, delay => %s::interval)",
                                   (job, claimed[0], outcome, delay)).fetchone()
            assert settled is not None and settled[0] in ("failed", "dead"), (outcome, settled)
        conn.execute("update brooq.job set state = 'done', updated_at = '-infinity' where id = %s", (job,))
        conn.execute("select brooq.purge()")


@FUZZ
@given(name=mostly(valid_name, topic_names), attempts=attempt_counts, base=setting_durations,
       max_=setting_durations, retention=setting_durations, size=payload_limits,
       notify=mostly(st.booleans(), st.none()))
def test_declare_topic_fuzz(conn: Conn, name: str | None, attempts: int | None, base: Duration,
                            max_: Duration, retention: Duration, size: int | None,
                            notify: bool | None) -> None:
    assume(name not in DECLARED)  # the enqueue fuzz owns those
    params = {"name": name, "attempts": attempts, "base": base.text, "max": max_.text,
              "retention": retention.text, "bytes": size, "notify": notify}
    rows, state = attempt(conn, DECLARE, params)
    valid = declaration_valid(name, attempts, base, max_, retention, size, notify)
    event(f"declare_topic: {state or 'ok'}")
    if rows is None:
        assert valid is not True, f"valid declaration refused with {state}: {short(params)}"
        return
    assert valid is not False, f"bad declaration accepted: {short(params)}"
    assert rows == [(name, attempts, True, True, True, size, notify)], rows
    stored = conn.execute("select count(*) from brooq.topic where name = %s", (name,)).fetchone()
    assert stored == (1,)
    assert name is not None
    prove_usable(conn, name)


def test_declared_topics_survive_a_refused_redeclaration(conn: Conn) -> None:
    """A refused re-declaration of an existing topic keeps its settings (not only new names)."""
    conn.execute("select brooq.declare_topic('kept', max_attempts => 7, retention => '2 days')")
    before = snapshot(conn)
    for bad in ({"max_attempts": 0}, {"max_attempts": 1001}, {"backoff_base": "0"},
                {"backoff_max": "1 millisecond"}, {"retention": "-1 second"},
                {"max_payload_bytes": 0}, {"notify": None}, {"retention": "1000000 years"},
                {"backoff_max": "101 years"}, {"retention": "70000000 mons -2099999999 days"},
                {"backoff_max": "70000000 mons -2099999999 days"}):
        (arg, value), = bad.items()
        try:
            conn.execute(f"select brooq.declare_topic('kept', {arg} => %s)", (value,))
        except psycopg.Error as exc:
            assert exc.sqlstate in ("22004", "22023"), exc.sqlstate
        else:
            raise AssertionError(f"declare_topic accepted {bad}")
        assert snapshot(conn) == before


def test_deep_json_limit_is_statement_too_complex(conn: Conn) -> None:
    """10k levels of nesting: accepted, or refused by PostgreSQL's parser as 54001, nothing written."""
    conn.execute("select brooq.declare_topic('deep')")
    before = snapshot(conn)
    for text in (nested(10_000, False), nested(10_000, True), nested(100_000, False)):
        rows, state = attempt(conn, "select id from brooq.enqueue('deep', %(p)s::jsonb)", {"p": text})
        assert rows is not None or state == "54001", state
    assert snapshot(conn)[2:] == before[2:]


def test_infinite_and_out_of_range_instants(conn: Conn) -> None:
    conn.execute("select brooq.declare_topic('time')")
    before = snapshot(conn)
    for at in ("infinity", "-infinity"):
        rows, state = attempt(conn, ENQUEUE, {"topic": "time", "payload": "{}", "key": None, "at": at,
                                              "priority": 0, "delay": None})
        assert (rows, state) == (None, "22023")
        rows, state = attempt(conn, ENQUEUE_MANY, {"topic": "time", "payloads": ["{}"], "keys": None,
                                                   "at": at, "priority": 0, "delay": None})
        assert (rows, state) == (None, "22023")
    for delay in ("178000000 years", "-1 microsecond"):
        rows, state = attempt(conn, ENQUEUE, {"topic": "time", "payload": "{}", "key": None, "at": None,
                                              "priority": 0, "delay": delay})
        assert rows is None and state in ("22008", "22023"), state
    assert snapshot(conn) == before
    later = datetime(2999, 1, 1, tzinfo=UTC)
    rows, _ = attempt(conn, ENQUEUE, {"topic": "time", "payload": "{}", "key": None,
                                      "at": later.isoformat(), "priority": INT_MAX, "delay": None})
    assert rows is not None
    assert conn.execute("select available_at, priority from brooq.job").fetchone() == (later, INT_MAX)
