"""The SQL brooq's Python code sends, every statement of it: one literal statement per
brooq function, then the few the tools (brooq.tools) send.

Parameters are positional (%s) with explicit casts, so that prepared statements
keep one plan whatever Python type psycopg picks for a value. Result columns are
named as the fields of the typed row they fill (brooq.job.Job, brooq.producer's
rows): rows are read by name, never by position.
"""

from __future__ import annotations

from typing import LiteralString

VERSION: LiteralString = "select brooq.version()"

# brooq deploy: what a database holds before deploying into it.
SCHEMA_PRESENT: LiteralString = """
select to_regnamespace('brooq') is not null, to_regprocedure('brooq.version()') is not null
"""
SQITCH_REGISTRY_PRESENT: LiteralString = "select to_regclass('sqitch.changes') is not null"
SQITCH_BROOQ_CHANGES: LiteralString = "select count(*) from sqitch.changes where project = 'brooq'"

ENQUEUE: LiteralString = """
select id, created
  from brooq.enqueue(topic => %s::text, payload => %s::jsonb, idempotency_key => %s::text,
                     available_at => %s::timestamptz, priority => %s::integer,
                     delay => %s::interval, group_key => %s::text,
                     trace_context => %s::jsonb)
"""

ENQUEUE_MANY: LiteralString = """
select id, created
  from brooq.enqueue_many(topic => %s::text, payloads => %s::jsonb[],
                          idempotency_keys => %s::text[], available_at => %s::timestamptz,
                          priority => %s::integer, delay => %s::interval,
                          group_keys => %s::text[], trace_context => %s::jsonb)
"""

DECLARE_TOPIC: LiteralString = """
select name
  from brooq.declare_topic(name => %s::text, max_attempts => %s::integer,
                           backoff_base => %s::interval, backoff_max => %s::interval,
                           retention => %s::interval, max_payload_bytes => %s::integer,
                           notify => %s::boolean, max_lease_losses => %s::integer,
                           max_lease => %s::interval, max_in_flight => %s::integer,
                           rate => %s::integer, per => %s::interval,
                           max_execution => %s::interval,
                           retain_done => %s::boolean, retain_payload => %s::boolean)
"""

CANCEL: LiteralString = "select brooq.cancel(job_id => %s::bigint)"

# Flush (admin): delete a topic's jobs in some states at once (`brooq flush`); the count
# first, for the confirmation.
FLUSH: LiteralString = "select brooq.flush(topic => %s::text, states => %s::text[])"
FLUSH_COUNT: LiteralString = """
select count(*) from brooq.jobs where topic = %s::text and state = any(%s::text[])
"""

# Re-drive (admin): a dead or canceled job back to pending; a topic's dead jobs in bulk.
RETRY: LiteralString = "select brooq.retry(job_id => %s::bigint)"

RETRY_DEAD: LiteralString = """
select brooq.retry_dead(topic => %s::text, include_canceled => %s::boolean,
                        max_jobs => %s::integer, since => %s::timestamptz)
"""

# brooq.jobs is the read-only view of brooq.job, granted to the three roles.
GET_JOB: LiteralString = """
select id, topic, state, attempts, max_attempts, priority, last_error, result, payload,
       idempotency_key as key, available_at, created_at, updated_at, locked_by, locked_until,
       progress, group_key
  from brooq.jobs
 where id = %s::bigint
"""

# brooq.wait: LISTEN first, then watch, then read the job (docs/python-guide.md).
LISTEN_SETTLED: LiteralString = "listen brooq_settled"
UNLISTEN_SETTLED: LiteralString = "unlisten brooq_settled"
WATCH: LiteralString = "select brooq.watch(job_id => %s::bigint)"
UNWATCH: LiteralString = "select brooq.unwatch(watch_id => %s::bigint)"

# `brooq jobs` and brooq.list_jobs: newest first, each filter off when NULL.
LIST_JOBS: LiteralString = """
select id, topic, state, attempts, max_attempts, priority, last_error, result, payload,
       idempotency_key as key, available_at, created_at, updated_at, locked_by, locked_until,
       progress, group_key
  from brooq.jobs
 where (%(topic)s::text is null or topic = %(topic)s::text)
   and (%(states)s::text[] is null or state = any(%(states)s::text[]))
 order by id desc
 limit %(limit)s::integer
"""

TOPIC_STATS: LiteralString = """
select topic, paused, pending, failed, ready, scheduled, processing, expired, oldest_ready_age,
       max_in_flight, rate, per, held_by_in_flight, held_by_rate, held_by_group
  from brooq.topic_stats
 order by topic
"""

# The worker's gauges: its own topics only.
TOPIC_STATS_OF: LiteralString = """
select topic, paused, pending, failed, ready, scheduled, processing, expired, oldest_ready_age,
       max_in_flight, rate, per, held_by_in_flight, held_by_rate, held_by_group
  from brooq.topic_stats
 where topic = any(%s::text[])
"""

# What retention (brooq.purge, pg_cron's purge_all) did to these topics: counters kept
# in the database, exported by the worker's metrics.
RETENTION_STATS_OF: LiteralString = """
select topic, deleted, remainders
  from brooq.retention_stats
 where topic = any(%s::text[])
"""

# Periodic jobs on pg_cron (admin); the view brooq.schedules (worker, admin).
SCHEDULE: LiteralString = """
select brooq.schedule(name => %s::text, cron => %s::text, topic => %s::text,
                      payload => %s::jsonb, priority => %s::integer)
"""

UNSCHEDULE: LiteralString = "select brooq.unschedule(name => %s::text)"

SCHEDULES: LiteralString = """
select name, cron, topic, payload, priority, created_at, updated_at, last_tick_at, last_job_id,
       last_job_state
  from brooq.schedules
 order by name
"""

# brooq.health(): six checks, each ok, warn or fail (brooq_worker and brooq_admin).
HEALTH: LiteralString = "select name, status, detail from brooq.health()"

PAUSE_TOPIC: LiteralString = "select brooq.pause_topic(%s::text)"

RESUME_TOPIC: LiteralString = "select brooq.resume_topic(%s::text)"

# The claim's transaction commits without waiting for its WAL flush (set_config's
# is_local: this transaction only; the setting is read at commit, so its place in the
# statement does not matter). A claim lost in a PostgreSQL crash only runs its jobs
# again, which at-least-once allows: the worker's settle of such an attempt is fenced
# by the lost lease token and writes nothing, and a settle that commits flushes the WAL
# before it, claim included. Settles stay durable: their own transactions.
CLAIM: LiteralString = """
select id, topic, payload, attempt, max_attempts, priority, lease_token, created_at,
       execution_deadline, execution_left, trace_context
  from pg_catalog.set_config('synchronous_commit', 'off', true),
       brooq.claim(worker => %s::text, topics => %s::text[], max_jobs => %s::integer,
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
                       lease_tokens => %s::bigint[], progress => %s::jsonb[]) as h(id)
"""

# The worker at start: each topic's max_execution as the database holds it (declared
# by this worker, or by an admin when it may not declare). brooq.topic is private;
# brooq.topic_stats is granted to brooq_worker.
TOPIC_MAX_EXECUTION: LiteralString = """
select topic, max_execution
  from brooq.topic_stats
 where topic = any(%s::text[])
"""

REAP: LiteralString = "select id, topic from brooq.reap(max_jobs => %s::integer)"

LISTEN: LiteralString = "listen brooq"

# The worker's connection: no statement may outlive a lease (milliseconds, as text).
SET_STATEMENT_TIMEOUT: LiteralString = "select set_config('statement_timeout', %s::text, false)"

# --- the tools (brooq.tools) -----------------------------------------------------------

# What `brooq declare-topic` prints back. brooq.topic is private: a role that may not
# read it gets less detail.
# TODO(lead): replace by brooq.topic_settings()
TOPIC_SETTINGS: LiteralString = """
select max_attempts, backoff_base, backoff_max, retention, max_payload_bytes, notify, paused
  from brooq.topic
 where name = %s::text
"""

# `brooq dashboard` (brooq.tools.dashboard): it reads only the views brooq.topic_stats,
# brooq.in_flight and brooq.jobs (docs/dashboard.md, "Its database role").

# Jobs in flight, the longest held first: who holds each, since when, lease left.
# Every jsonb column of the dashboard's queries is read as text: a value Python's json
# cannot decode (nested too deep, a number of thousands of digits) must not fail the
# page of the job it is there to show, nor of its neighbours.
DASHBOARD_IN_FLIGHT: LiteralString = """
select id, topic, attempts, max_attempts, locked_by, claimed_at, running_for,
       locked_until - now() as lease_left, expired, left(progress::text, 200) as progress
  from brooq.in_flight
 order by claimed_at, id
 limit %s::integer
"""

# The dead and failed list: newest first, the topic filter off when NULL (as LIST_JOBS),
# without the payload and result the list does not show.
DASHBOARD_JOBS: LiteralString = """
select id, topic, state, attempts, max_attempts, updated_at, left(last_error, 400) as last_error
  from brooq.jobs
 where (%(topic)s::text is null or topic = %(topic)s::text)
   and state = any(%(states)s::text[])
 order by id desc
 limit %(limit)s::integer
"""

# A job's page: payload, result and progress as text cut at %(shown)s characters, with
# their whole length (the page says how much it left out).
DASHBOARD_JOB: LiteralString = """
select id, topic, state, attempts, max_attempts, priority, left(last_error, %(shown)s) as last_error,
       idempotency_key as key, available_at, created_at, updated_at, locked_by, locked_until,
       left(payload::text, %(shown)s) as payload, length(payload::text) as payload_length,
       left(result::text, %(shown)s) as result, length(result::text) as result_length,
       left(progress::text, %(shown)s) as progress, length(progress::text) as progress_length
  from brooq.jobs
 where id = %(id)s::bigint
"""

# The database's clock: the minutes of the throughput chart are its minutes.
DASHBOARD_CLOCK: LiteralString = "select now()"

# Jobs finished (done, dead) per topic and minute since each topic's `since`, by the
# time their row was settled (updated_at): a range of job_terminal_idx (topic,
# updated_at) per topic. Purged rows no longer count: a retention shorter than the
# window makes the chart lie.
DASHBOARD_THROUGHPUT: LiteralString = """
select t.topic, b.minute, b.done, b.dead
  from unnest(%(topics)s::text[], %(sinces)s::timestamptz[]) as t(topic, since)
 cross join lateral (
       select date_trunc('minute', j.updated_at) as minute,
              count(*) filter (where j.state = 'done') as done,
              count(*) filter (where j.state = 'dead') as dead
         from brooq.jobs j
        where j.topic = t.topic
          and j.state in ('done', 'dead')
          and j.updated_at >= t.since
        group by 1) as b
"""

# /healthz: the dashboard reaches its database.
DASHBOARD_PING: LiteralString = "select 1"

# `brooq deploy` failed: what the deploying role lacks (docs/security.md, "Deploying
# with a non-superuser owner"). Ownership comes with membership in the owner.
DEPLOY_RIGHTS: LiteralString = """
select r.rolname as role, r.rolsuper as superuser, current_database() as database,
       has_database_privilege(current_database(), 'create') as can_create,
       r.rolcreaterole
       or (select count(*) filter (where pg_has_role(r.oid, oid, 'member with admin option'))
             from pg_catalog.pg_roles where rolname in ('brooq_producer', 'brooq_worker')) = 2
           as can_grant_roles,
       coalesce((select pg_has_role(nspowner, 'member') from pg_catalog.pg_namespace
                  where nspname = 'brooq'), true) as owns_brooq,
       coalesce((select pg_has_role(nspowner, 'member') from pg_catalog.pg_namespace
                  where nspname = 'sqitch'), true) as owns_sqitch
  from pg_catalog.pg_roles r
 where r.rolname = current_user
"""

# `brooq demo`. Its enqueue statements are shown to the user and run by psql, so they
# are rendered with their values (psycopg.ClientCursor.mogrify) before they are sent.
DEMO_DECLARE_TOPIC: LiteralString = (
    "select name from brooq.declare_topic(%(topic)s, max_attempts => %(max_attempts)s,"
    " backoff_base => %(backoff_base)s, backoff_max => %(backoff_max)s)")

DEMO_ENQUEUE_LONG: LiteralString = (
    "select id from brooq.enqueue(%(topic)s, %(payload)s, priority => %(priority)s)")

DEMO_ENQUEUE_EMAIL: LiteralString = (
    "select id from brooq.enqueue_many(%(topic)s, array(select jsonb_build_object("
    "'to', %(prefix)s || i || '@example.com') from generate_series(1, %(count)s) as i))")

DEMO_ENQUEUE_EMAIL_LATER: LiteralString = (
    "select id from brooq.enqueue_many(%(topic)s, array(select jsonb_build_object("
    "'to', %(prefix)s || i || '@example.com') from generate_series(1, %(count)s) as i),"
    " delay => %(delay)s)")

DEMO_ENQUEUE_EMAIL_FIRST: LiteralString = (
    "select id from brooq.enqueue_many(%(topic)s, array(select jsonb_build_object("
    "'to', %(prefix)s || i || '@example.com') from generate_series(1, %(count)s) as i),"
    " priority => %(priority)s)")

DEMO_ENQUEUE_FLAKY: LiteralString = (
    "select id from brooq.enqueue_many(%(topic)s, array(select jsonb_build_object("
    "'order', i, 'fail_times', 1 + i %% 2) from generate_series(1, %(count)s) as i))")

DEMO_ENQUEUE_DOOMED: LiteralString = (
    "select id from brooq.enqueue_many(%(topic)s, array(select jsonb_build_object("
    "'invoice', i) from generate_series(1, %(count)s) as i))")

DEMO_CLOCK: LiteralString = "select clock_timestamp()"

DEMO_HAS_SCHEMA: LiteralString = "select to_regnamespace('brooq') is not null"

DEMO_JOB_STATE: LiteralString = "select state from brooq.jobs where id = %s::bigint"

DEMO_UNFINISHED: LiteralString = """
select count(*)
  from brooq.jobs
 where id = any(%s::bigint[]) and state not in ('done', 'dead', 'canceled')
"""

DEMO_FATE_BY_STATE: LiteralString = """
select state, count(*) as jobs, avg(attempts)::float8 as avg_attempts,
       (array_agg(last_error order by id) filter (where last_error is not null))[1] as last_error
  from brooq.jobs
 where id = any(%s::bigint[])
 group by state
"""

DEMO_FATE_BY_TOPIC: LiteralString = """
select topic, count(*) as jobs,
       count(*) filter (where state = 'done') as done,
       count(*) filter (where state = 'dead') as dead,
       count(*) filter (where state = 'canceled') as canceled,
       count(*) filter (where state not in ('done', 'dead', 'canceled')) as other,
       avg(attempts)::float8 as avg_attempts
  from brooq.jobs
 where id = any(%s::bigint[])
 group by topic
 order by topic
"""

# How long after enqueue the delayed jobs finished at the earliest, and by which
# rank (in finishing order among the demo.email jobs) the last priority job was done.
DEMO_DELAYED_AND_VIP: LiteralString = """
with email as (
    select id, rank() over (order by updated_at, id) as rank
      from brooq.jobs
     where id = any(%(ids)s::bigint[]) and topic = 'demo.email' and state = 'done'
)
select (select extract(epoch from min(updated_at - created_at))::float8
          from brooq.jobs where id = any(%(delayed)s::bigint[]) and state = 'done') as delayed_after,
       (select max(rank) from email where id = any(%(vip)s::bigint[])) as vip_rank,
       (select count(*) from email) as email_done
"""

# The busy phase: jobs ready at once (not the delayed ones, not the long one), from
# the worker's start to the last one's end, on the database's clock.
DEMO_BUSY: LiteralString = """
select count(*) as jobs, sum(attempts) as attempts,
       extract(epoch from max(updated_at) - %(start)s::timestamptz)::float8 as seconds
  from brooq.jobs
 where id = any(%(ids)s::bigint[]) and state in ('done', 'dead')
"""
