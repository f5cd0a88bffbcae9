"""Waiting for a job's fate: brooq.wait on a connection, brooq.wait_async on an
asyncio one.

Woken by NOTIFY, not by polling: the waiter LISTENs on brooq_settled, registers
with brooq.watch, then reads the job. settle_many and cancel send NOTIFY
brooq_settled (payload: the job id) when they make a watched job terminal, so a
job that ends after the read wakes the waiter, and one that ended before it is
seen by the read. Only watched jobs are announced: a queue nobody waits on sends
no NOTIFY from its hot path.

The connection must be in autocommit mode (notifications arrive between
transactions); it listens only while wait runs.
"""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

import psycopg
from psycopg.rows import class_row, scalar_row

from brooq import queries
from brooq.errors import mapped
from brooq.payload import guard_jsonb
from brooq.producer import JobFate, decoded
from brooq.states import TERMINAL


def _seconds(timeout: float | timedelta) -> float:
    seconds = timeout.total_seconds() if isinstance(timeout, timedelta) else float(timeout)
    if seconds < 0:
        raise ValueError(f"timeout {timeout!r} is negative")
    return seconds


def _autocommit(conn: psycopg.Connection[Any] | psycopg.AsyncConnection[Any]) -> None:
    if not conn.autocommit:
        raise ValueError("brooq.wait needs a connection in autocommit mode: notifications "
                         "arrive between transactions")


def _timed_out(job_id: int, fate: JobFate, seconds: float) -> TimeoutError:
    return TimeoutError(f"job {job_id} is still {fate.state} after {seconds:g}s")


def wait(conn: psycopg.Connection[Any], job_id: int,
         timeout: float | timedelta = 30.0) -> JobFate | None:
    """The job's fate once it is done, dead or canceled; None when no job has this id.

    TimeoutError when it is not terminal within ``timeout`` (seconds or a timedelta);
    UndecodableJob as brooq.get_job.
    """
    seconds = _seconds(timeout)
    _autocommit(conn)
    deadline = time.monotonic() + seconds
    with mapped():
        conn.execute(queries.LISTEN_SETTLED)
        watch = conn.cursor(row_factory=scalar_row).execute(queries.WATCH, [job_id]).fetchone()
        try:
            while True:
                cur = conn.cursor(row_factory=class_row(JobFate))
                guard_jsonb(cur)
                fate = decoded(cur.execute(queries.GET_JOB, [job_id]).fetchone())
                if fate is None or fate.state in TERMINAL:
                    return fate
                left = deadline - time.monotonic()
                if left <= 0:
                    raise _timed_out(job_id, fate, seconds)
                for note in conn.notifies(timeout=left):
                    if note.payload == str(job_id):
                        break
        finally:
            conn.execute(queries.UNWATCH, [watch])
            conn.execute(queries.UNLISTEN_SETTLED)


async def wait_async(conn: psycopg.AsyncConnection[Any], job_id: int,
                     timeout: float | timedelta = 30.0) -> JobFate | None:
    """:func:`wait` on a psycopg.AsyncConnection."""
    seconds = _seconds(timeout)
    _autocommit(conn)
    deadline = time.monotonic() + seconds
    with mapped():
        await conn.execute(queries.LISTEN_SETTLED)
        cur = await conn.cursor(row_factory=scalar_row).execute(queries.WATCH, [job_id])
        watch = await cur.fetchone()
        try:
            while True:
                read = conn.cursor(row_factory=class_row(JobFate))
                guard_jsonb(read)
                await read.execute(queries.GET_JOB, [job_id])
                fate = decoded(await read.fetchone())
                if fate is None or fate.state in TERMINAL:
                    return fate
                left = deadline - time.monotonic()
                if left <= 0:
                    raise _timed_out(job_id, fate, seconds)
                async for note in conn.notifies(timeout=left):
                    if note.payload == str(job_id):
                        break
        finally:
            await conn.execute(queries.UNWATCH, [watch])
            await conn.execute(queries.UNLISTEN_SETTLED)
