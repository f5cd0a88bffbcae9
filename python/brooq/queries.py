"""The SQL brooq's Python code sends: one literal statement per brooq function.

Parameters are positional (%s) with explicit casts, so that prepared statements
keep one plan whatever Python type psycopg picks for a value.
"""

from __future__ import annotations

from typing import LiteralString

VERSION: LiteralString = "select brooq.version()"

ENQUEUE: LiteralString = """
select id, created
  from brooq.enqueue(topic => %s::text, payload => %s::jsonb, idempotency_key => %s::text,
                     available_at => %s::timestamptz, priority => %s::integer,
                     delay => %s::interval)
"""

ENQUEUE_MANY: LiteralString = """
select id, created
  from brooq.enqueue_many(topic => %s::text, payloads => %s::jsonb[],
                          idempotency_keys => %s::text[], available_at => %s::timestamptz,
                          priority => %s::integer, delay => %s::interval)
"""

DECLARE_TOPIC: LiteralString = """
select name
  from brooq.declare_topic(name => %s::text, max_attempts => %s::integer,
                           backoff_base => %s::interval, backoff_max => %s::interval,
                           retention => %s::interval, max_payload_bytes => %s::integer,
                           notify => %s::boolean)
"""

CANCEL: LiteralString = "select brooq.cancel(job_id => %s::bigint)"

# brooq.jobs is the read-only view of brooq.job, granted to the three roles.
GET_JOB: LiteralString = """
select id, topic, state, attempts, max_attempts, priority, last_error, result, payload,
       idempotency_key, available_at, created_at, updated_at, locked_by, locked_until
  from brooq.jobs
 where id = %s::bigint
"""

TOPIC_STATS: LiteralString = """
select topic, paused, pending, failed, ready, scheduled, processing, expired,
       extract(epoch from oldest_ready_age)::float8
  from brooq.topic_stats
"""

CLAIM: LiteralString = """
select id, topic, payload, attempt, max_attempts, priority, lease_token, created_at
  from brooq.claim(worker => %s::text, topics => %s::text[], max_jobs => %s::integer,
                   lease => %s::interval)
"""

SETTLE_MANY: LiteralString = """
select id, state
  from brooq.settle_many(worker => %s::text, job_ids => %s::bigint[],
                         lease_tokens => %s::bigint[], outcomes => %s::text[],
                         errors => %s::text[], delays => %s::interval[],
                         results => %s::jsonb[])
"""

SETTLE: LiteralString = """
select brooq.settle(job_id => %s::bigint, worker => %s::text, lease_token => %s::bigint,
                    outcome => %s::text, error => %s::text, delay => %s::interval,
                    result => %s::jsonb)
"""

HEARTBEAT: LiteralString = """
select id
  from brooq.heartbeat(worker => %s::text, job_ids => %s::bigint[], lease => %s::interval,
                       lease_tokens => %s::bigint[]) as h(id)
"""

REAP: LiteralString = "select id, topic from brooq.reap(max_jobs => %s::integer)"

LISTEN: LiteralString = "listen brooq"
