"""The SQL the worker and the client send, every statement of it: one literal statement
per brooq function. The tools' own statements (brooq deploy, the dashboard, the demo)
are in brooq.tools.queries.

Parameters are positional (%s) with explicit casts, so that prepared statements
keep one plan whatever Python type psycopg picks for a value. Result columns are
named as the fields of the typed row they fill (brooq.job.Job, brooq.producer's
rows): rows are read by name, never by position.
"""

from __future__ import annotations

from typing import LiteralString

from brooq import settings

VERSION: LiteralString = "select brooq.version()"

ENQUEUE: LiteralString = """
select id, created
  from brooq.enqueue(topic => %s::text, payload => %s::jsonb, idempotency_key => %s::text,
                     available_at => %s::timestamptz, priority => %s::integer,
                     delay => %s::interval, group_key => %s::text,
                     trace_context => %s::jsonb)
"""

# ENQUEUE's parameters, then a workflow's: the jobs it waits for and its policy.
ENQUEUE_AFTER: LiteralString = """
select id, created
  from brooq.enqueue(topic => %s::text, payload => %s::jsonb, idempotency_key => %s::text,
                     available_at => %s::timestamptz, priority => %s::integer,
                     delay => %s::interval, group_key => %s::text,
                     trace_context => %s::jsonb, after => %s::bigint[], after_policy => %s::text)
"""

ENQUEUE_MANY: LiteralString = """
select id, created
  from brooq.enqueue_many(topic => %s::text, payloads => %s::jsonb[],
                          idempotency_keys => %s::text[], available_at => %s::timestamptz,
                          priority => %s::integer, delay => %s::interval,
                          group_keys => %s::text[], trace_context => %s::jsonb)
"""

# enqueue_many with a workflow's edges (after_child[i] waits for after_parent[i])
ENQUEUE_MANY_AFTER: LiteralString = """
select id, created
  from brooq.enqueue_many(topic => %s::text, payloads => %s::jsonb[],
                          idempotency_keys => %s::text[], available_at => %s::timestamptz,
                          priority => %s::integer, delay => %s::interval,
                          group_keys => %s::text[], trace_context => %s::jsonb,
                          after_child => %s::integer[], after_parent => %s::bigint[],
                          after_policy => %s::text)
"""

# A topic's settings: every setting named, from brooq.settings.TopicSettings (one named
# parameter each; alter_topic's None leaves a setting as it is, clear sets it to none).
DECLARE_TOPIC: LiteralString = (
    "select " + settings.COLUMNS + " from brooq.declare_topic(name => %(name)s::text, "
    + settings.named_arguments() + ")")

ALTER_TOPIC: LiteralString = (
    "select " + settings.COLUMNS + " from brooq.alter_topic(name => %(name)s::text, "
    + settings.named_arguments() + ", clear => %(clear)s::text[])")

TOPIC: LiteralString = "select " + settings.COLUMNS + " from brooq.topics where name = %s::text"

CANCEL: LiteralString = "select brooq.cancel(job_id => %s::bigint)"

# Flush (admin): delete a topic's jobs in some states at once (`brooq flush`, which
# counts them first with COUNT_JOBS, for the confirmation).
FLUSH: LiteralString = "select brooq.flush(topic => %s::text, states => %s::text[])"

# Re-drive (admin): a dead or canceled job back to pending; a topic's dead jobs in bulk.
RETRY: LiteralString = """
select brooq.retry(job_id => %s::bigint, rearm_children => %s::boolean, clear_steps => %s::boolean)
"""

RETRY_DEAD: LiteralString = """
select brooq.retry_dead(topic => %s::text, include_canceled => %s::boolean,
                        max_jobs => %s::integer, since => %s::timestamptz,
                        rearm_children => %s::boolean, clear_steps => %s::boolean)
"""

# brooq.jobs is the read-only view of brooq.job, granted to the three roles.
# A job's parents (workflows), with their states and outcomes, in one query.
PARENTS: LiteralString = """
select id, topic, state, result, last_error, updated_at from brooq.parents(%s::bigint)
"""

# Durable steps: a job's finished steps (and the wait it is in), read on request.
STEPS: LiteralString = """
select name, kind, result, attempt, at from brooq.steps(%s::bigint)
"""
# ... the first ones only (brooq job, a bounded read)
STEPS_FIRST: LiteralString = """
select name, kind, result, attempt, at from brooq.steps(%s::bigint, %s::integer)
"""

# A producer's event, in its own transaction: wakes the jobs that wait for its name.
EMIT_EVENT: LiteralString = """
select id, woken from brooq.emit_event(name => %s::text, payload => %s::jsonb, keep => %s::interval)
"""

# The handler's own calls (brooq.durable.StepStore), fenced by the job's lease.
CHECKPOINT: LiteralString = """
select result, created
  from brooq.checkpoint(worker => %s::text, job_id => %s::bigint, lease_token => %s::bigint,
                        name => %s::text, result => %s::jsonb)
"""
SLEEP: LiteralString = """
select state, until
  from brooq.sleep(worker => %s::text, job_id => %s::bigint, lease_token => %s::bigint, step => %s::text,
                   until => %s::timestamptz, duration => %s::interval)
"""
WAIT_FOR_EVENT: LiteralString = """
select outcome, payload, until
  from brooq.wait_for_event(worker => %s::text, job_id => %s::bigint, lease_token => %s::bigint,
                            step => %s::text, event => %s::text, timeout => %s::interval)
"""

CHILDREN: LiteralString = """
select id, topic, state, parents_left, after_policy, last_error, updated_at
  from brooq.children(%s::bigint, %s::integer)
"""

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
 where (%(topics)s::text[] is null or topic = any(%(topics)s::text[]))
   and (%(states)s::text[] is null or state = any(%(states)s::text[]))
 order by id desc
 limit %(limit)s::integer
"""

# brooq.count_jobs: LIST_JOBS's filters, counted.
COUNT_JOBS: LiteralString = """
select count(*)
  from brooq.jobs
 where (%(topics)s::text[] is null or topic = any(%(topics)s::text[]))
   and (%(states)s::text[] is null or state = any(%(states)s::text[]))
"""

TOPIC_STATS: LiteralString = """
select topic, paused, pending, failed, ready, scheduled, processing, expired, oldest_ready_age,
       max_in_flight, rate, per, held_by_in_flight, held_by_rate, held_by_group, waiting
  from brooq.topic_stats
 order by topic
"""

# The worker's gauges: one of its topics. An equality reaches the view's counts, which
# then read only that topic's entries; `topic = any(...)` does not, and every topic's
# jobs were counted (~130 ms with a million ready jobs, against ~3 ms for 10,000 of them).
TOPIC_STATS_OF: LiteralString = """
select topic, paused, pending, failed, ready, scheduled, processing, expired, oldest_ready_age,
       max_in_flight, rate, per, held_by_in_flight, held_by_rate, held_by_group, waiting
  from brooq.topic_stats
 where topic = %s::text
"""

# What retention (brooq.purge, pg_cron's purge_all) did to these topics: counters kept
# in the database, exported by the worker's metrics.
RETENTION_STATS_OF: LiteralString = """
select topic, deleted, remainders
  from brooq.retention_stats
 where topic = any(%s::text[])
"""

# Periodic jobs, ticked by pg_cron or by the workers (admin); the view brooq.schedules
# (worker, admin).
SCHEDULE: LiteralString = """
select brooq.schedule(name => %s::text, cron => %s::text, topic => %s::text,
                      payload => %s::jsonb, priority => %s::integer, ticker => %s::text)
"""

UNSCHEDULE: LiteralString = "select brooq.unschedule(name => %s::text)"

SCHEDULES: LiteralString = """
select name, cron, ticker, topic, payload, priority, created_at, updated_at, next_tick_at,
       last_tick_at, last_job_id, last_job_state, last_error
  from brooq.schedules
 order by name
"""

# brooq declare (brooq.reconcile): every topic with its settings, every schedule's
# definition, its payload as JSON text (Django's connection loads jsonb as text).
DECLARED_TOPICS: LiteralString = "select " + settings.COLUMNS + " from brooq.topics order by name"

DECLARED_SCHEDULES: LiteralString = """
select name, cron, ticker, topic, payload::text as payload, priority
  from brooq.schedules
 order by name
"""

# The worker's ticker (brooq.ticker): the workers' schedules that are due.
TICK_SCHEDULES: LiteralString = """
select schedule, tick, job_id, created, error from brooq.tick_schedules(max_ticks => %s::integer)
"""

# Remove a topic (admin): refused while jobs or schedules remain unless force.
DROP_TOPIC: LiteralString = "select brooq.drop_topic(name => %s::text, force => %s::boolean)"

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
       execution_deadline, execution_left, trace_context, parents
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

# --- brooq.testing: drain and the test database of its pytest plugin ----------------------

# drain(scheduled=True) moves brooq's clock (brooq._now(): the setting brooq.now, which
# only a superuser's session may set) forward to the next job that is not ready yet.
TESTING_SUPERUSER: LiteralString = """
select r.rolsuper from pg_catalog.pg_roles r where r.rolname = session_user
"""
TESTING_CLOCK: LiteralString = "select pg_catalog.current_setting('brooq.now', true)"
TESTING_SET_CLOCK: LiteralString = "select pg_catalog.set_config('brooq.now', %s::text, %s::boolean)"
# The earliest instant after brooq's clock at which a claimable job of these topics
# becomes ready (NULL: none); brooq.claim, then, judges whether it is.
TESTING_NEXT_AVAILABLE: LiteralString = """
select min(available_at)
  from brooq.jobs
 where topic = any(%s::text[]) and state = any(%s::text[]) and available_at > brooq._now()
"""

# The plugin's database: one per test session, on the throwaway cluster or the server of
# BROOQ_TEST_DSN (psycopg.sql fills in its name). UTF-8 as brooq needs: the server's
# default when it is UTF-8, else from template0 with the C locale.
TESTING_DEFAULT_ENCODING: LiteralString = """
select pg_catalog.pg_encoding_to_char(encoding) from pg_catalog.pg_database where datname = 'template1'
"""
TESTING_CREATE_DATABASE: LiteralString = "create database {}"
TESTING_CREATE_DATABASE_UTF8: LiteralString = """
create database {} template template0 encoding 'UTF8' lc_collate 'C' lc_ctype 'C'
"""
TESTING_DROP_DATABASE: LiteralString = "drop database if exists {} with (force)"
