"""assert_enqueued and refute_enqueued: what the code under test enqueued, read from the
queue itself (brooq.list_jobs, brooq.parents), with a failure message that shows what
was enqueued on the topic instead."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg import pq

from brooq.calls import JobFate
from brooq.payload import PayloadLoader, to_json
from brooq.producer import list_jobs, parents
from brooq.states import STATES

Conn = psycopg.Connection[Any]

# Enqueued and not run to an end: a claim may still take it (pending, or failed and
# waiting for its retry), or it waits for its parents (waiting).
QUEUED: tuple[str, ...] = ("pending", "failed", "waiting")
SHOWN = 10  # jobs a failure message lists
SHOWN_CHARS = 200  # of each payload
SEARCHED = 10000  # the newest jobs of the topic searched (brooq.list_jobs' largest limit)


class _Any:
    def __repr__(self) -> str:
        return "ANY"


ANY: Any = _Any()  # a field not asked about


def assert_enqueued(conn: Conn, topic: str, payload: Any = ANY, *, key: Any = ANY,
                    priority: Any = ANY, group: Any = ANY, after: Iterable[Any] | None = None,
                    states: Sequence[str] = QUEUED, count: int | None = None) -> JobFate:
    """Assert that a job of ``topic`` in ``states`` (default: pending, failed or waiting,
    i.e. not run to an end) matches, and return the newest such job (a brooq.JobFate).

    ``payload`` matches as jsonb's ``@>`` does: every key given, at any depth, with that
    value (a dataclass or pydantic model compares as its JSON); ``key``, ``priority``,
    ``group``: equal; ``after``: the job waits for at least these jobs (ids, or what
    enqueue returned); ``count``: exactly that many jobs match. A field not given is not
    compared. On failure, an AssertionError lists the jobs of the topic (newest first, cut
    short), or the topics that have jobs when it has none."""
    wanted = _Wanted(payload, key, priority, group, after)
    with _decoded(conn):
        jobs = _jobs(conn, topic, states)
        matching = [job for job in jobs if wanted.matches(conn, job)]
        if matching and (count is None or len(matching) == count):
            return matching[0]
        found = "no job" if not matching else f"{len(matching)} jobs"
        short = "" if count is None else f", not {count}"
        raise AssertionError(f"assert_enqueued: {found} of topic {topic!r} ({_states(states)}) "
                             f"{wanted}{short}\n{_shown(conn, topic, states, jobs, wanted)}")


def refute_enqueued(conn: Conn, topic: str, payload: Any = ANY, *, key: Any = ANY,
                    priority: Any = ANY, group: Any = ANY, after: Iterable[Any] | None = None,
                    states: Sequence[str] = QUEUED) -> None:
    """Assert that no job of ``topic`` in ``states`` matches (the fields as in
    assert_enqueued; none given: no job of the topic at all); the AssertionError lists
    the jobs that do."""
    wanted = _Wanted(payload, key, priority, group, after)
    with _decoded(conn):
        jobs = _jobs(conn, topic, states)
        matching = [job for job in jobs if wanted.matches(conn, job)]
        if matching:
            raise AssertionError(
                f"refute_enqueued: {len(matching)} jobs of topic {topic!r} ({_states(states)}) "
                f"{wanted}, newest first:\n{_listed(conn, matching, wanted)}")


class _Wanted:
    """The fields a test asks about; ANY: not asked."""

    def __init__(self, payload: Any, key: Any, priority: Any, group: Any,
                 after: Iterable[Any] | None) -> None:
        # as stored: the JSON of a dataclass or a pydantic model, tuples as arrays
        self.payload = payload if payload is ANY else json.loads(to_json(payload))
        self.key = key
        self.priority = priority
        self.group = group
        self.after = None if after is None else sorted({_job_id(a) for a in after})

    def matches(self, conn: Conn, job: JobFate) -> bool:
        if self.key is not ANY and job.key != self.key:
            return False
        if self.priority is not ANY and job.priority != self.priority:
            return False
        if self.group is not ANY and job.group_key != self.group:
            return False
        if self.payload is not ANY and not contains(job.payload, self.payload):
            return False
        return self.after is None or set(self.after) <= {p.id for p in parents(conn, job.id)}

    def __str__(self) -> str:
        asked = []
        if self.payload is not ANY:
            asked.append(f"payload containing {_json(self.payload)}")
        for name in ("key", "priority", "group"):
            if (value := getattr(self, name)) is not ANY:
                asked.append(f"{name} {value!r}")
        if self.after is not None:
            asked.append(f"after jobs {self.after}")
        return f"with {', '.join(asked)}" if asked else "at all"


def contains(have: Any, want: Any) -> bool:
    """jsonb's ``have @> want`` on decoded JSON: an object contains the keys of ``want``
    with values that contain theirs, an array contains each element of ``want`` in one of
    its own, a scalar is equal (true is not 1)."""
    if isinstance(want, dict):
        return isinstance(have, dict) and all(k in have and contains(have[k], v) for k, v in want.items())
    if isinstance(want, list):
        return isinstance(have, list) and all(any(contains(h, w) for h in have) for w in want)
    if isinstance(have, (dict, list)) or isinstance(have, bool) is not isinstance(want, bool):
        return False
    return bool(have == want)


def _job_id(job: Any) -> int:
    value = getattr(job, "id", job)
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"after: job ids, or what enqueue returned, not {job!r}"[:200])
    return value


def _jobs(conn: Conn, topic: str, states: Sequence[str]) -> list[JobFate]:
    if isinstance(states, str) or set(states) - set(STATES):
        raise ValueError(f"states: a list of job states ({', '.join(STATES)}), not {states!r}")
    return list_jobs(conn, topic=topic, states=list(states), limit=SEARCHED)


def _states(states: Sequence[str]) -> str:
    return ", ".join(states) if len(states) < 2 else f"{', '.join(states[:-1])} or {states[-1]}"


def _shown(conn: Conn, topic: str, states: Sequence[str], jobs: list[JobFate], wanted: _Wanted) -> str:
    """What the topic holds instead: its jobs, or the topics that have jobs."""
    if jobs:
        return f"enqueued on {topic!r}, newest first:\n{_listed(conn, jobs, wanted)}"
    others: dict[str, int] = {}
    for job in list_jobs(conn, states=list(states), limit=SEARCHED):
        others[job.topic] = others.get(job.topic, 0) + 1
    if not others:
        return f"no job of any topic is {_states(states)}"
    listed = ", ".join(f"{name!r} ({n})" for name, n in sorted(others.items())[:SHOWN])
    return f"no job of {topic!r} is; jobs of other topics are: {listed}"


def _listed(conn: Conn, jobs: list[JobFate], wanted: _Wanted) -> str:
    lines = [f"  {_line(conn, job, wanted)}" for job in jobs[:SHOWN]]
    if len(jobs) > SHOWN:
        lines.append(f"  ... and {len(jobs) - SHOWN} more")
    return "\n".join(lines)


def _line(conn: Conn, job: JobFate, wanted: _Wanted) -> str:
    text = f"job {job.id} {job.state} payload={_json(job.payload)}"
    if job.key is not None:
        text += f" key={job.key!r}"
    if job.priority:
        text += f" priority={job.priority}"
    if job.group_key is not None:
        text += f" group={job.group_key!r}"
    if wanted.after is not None:
        text += f" after={sorted(p.id for p in parents(conn, job.id))}"
    return text


def _json(value: Any) -> str:
    text = json.dumps(value, separators=(",", ":"), default=str)
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS - 3] + "..."


@contextmanager
def _decoded(conn: Conn) -> Iterator[None]:
    """jsonb read as the worker reads it, within the block, on a connection that loads
    it otherwise (Django's loads it as text); its own loader after."""
    adapters = conn.adapters
    before = adapters.get_loader(adapters.types["jsonb"].oid, pq.Format.TEXT)
    adapters.register_loader("jsonb", PayloadLoader)
    try:
        yield
    finally:
        if before is not None:
            adapters.register_loader("jsonb", before)
