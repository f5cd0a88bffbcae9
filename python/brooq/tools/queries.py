"""The SQL the tools (brooq.tools) send, every statement of it: `brooq deploy`, the
dashboard and the demo. The worker's and the client's statements are in brooq.queries;
the rules are the same (literal statements, positional or named parameters with
explicit casts, result columns named as the fields of the row they fill).
"""

from __future__ import annotations

from typing import LiteralString

# brooq deploy: what a database holds before deploying into it.
SCHEMA_PRESENT: LiteralString = """
select to_regnamespace('brooq') is not null, to_regprocedure('brooq.version()') is not null
"""
SQITCH_REGISTRY_PRESENT: LiteralString = "select to_regclass('sqitch.changes') is not null"
SQITCH_BROOQ_CHANGES: LiteralString = "select count(*) from sqitch.changes where project = 'brooq'"

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

# `brooq dashboard` (brooq.tools.dashboard): it reads only the views brooq.topic_stats,
# brooq.topics, brooq.in_flight and brooq.jobs (docs/dashboard.md, "Its database role").

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

# The topics' names, for the filters and the search box: brooq.topics, not
# brooq.topic_stats, which counts every ready job (~200 ms with a million of them).
DASHBOARD_TOPIC_NAMES: LiteralString = "select name from brooq.topics order by name"

# The search box: the job of an id, and the jobs of an idempotency key in any of the
# topics given (the index on (topic, idempotency_key) answers it), newest first.
DASHBOARD_FIND: LiteralString = """
select id, topic, state, attempts, max_attempts, updated_at, left(last_error, 400) as last_error
  from brooq.jobs
 where id = %(id)s::bigint
    or (topic = any(%(topics)s::text[]) and idempotency_key = %(key)s::text)
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

# A job's parents and children (workflows) on its page: ids and states only, never the
# parents' results nor the children's errors (a child may have 10,000 parents of 1 MB
# results each, and its page reloads itself). The first %(limit)s in id order; the
# parents also with how many there are in all (at most 10,000), the children with none
# (a parent's children are not bounded: the page asks for one more than it shows).
# Through brooq.parents and brooq.children, granted to the dashboard's role.
DASHBOARD_JOB_PARENTS: LiteralString = """
select p.id, p.state::text as state, count(*) over () as total
  from brooq.parents(%(id)s::bigint) as p
 order by p.id
 limit %(limit)s::integer
"""

# a job's durable steps, the first ones (brooq.steps reads no more), results cut short
DASHBOARD_JOB_STEPS: LiteralString = """
select s.name, s.kind, left(s.result::text, %(shown)s) as result,
       length(s.result::text) as result_length, s.attempt, s.at
  from brooq.steps(%(id)s::bigint, %(limit)s::integer) as s
"""

DASHBOARD_JOB_CHILDREN: LiteralString = """
select c.id, c.state::text as state
  from brooq.children(%(id)s::bigint, %(limit)s::integer) as c
 order by c.id
"""

# The jobs page (/jobs): jobs of every state, filtered, a page at a time by keyset,
# never by OFFSET (docs/dashboard.md, "Browsing jobs"). Each statement reads, per group
# (a topic, or a topic and a state), at most %(scan)s entries of one index range in
# the list's order, starting strictly after the cursor; of those it keeps the hits
# (the rows the filters match: a state the index does not tell apart, the payload's
# containment, which no index answers) and the row numbered %(scan)s, the last it
# read, at most %(keep)s rows a group: the dashboard merges the groups, keeps what is
# known complete and makes the next cursor. The ids alone come back (and the key of
# the order); DASHBOARD_BROWSE_SHOW then reads what the page shows of them.
#
# Failed, dead and canceled: job_failures_idx (topic, state, id), newest first.
DASHBOARD_BROWSE_FAILURES: LiteralString = """
select t.topic || '/' || s.state as grp, y.id, y.hit, y.n,
       null::integer as priority, null::timestamptz as available_at, null::timestamptz as updated_at
  from unnest(%(topics)s::text[]) as t(topic)
 cross join unnest(%(states)s::text[]) as s(state)
 cross join lateral (
       select x.id, x.hit, x.n
         from (select j.id,
                      (%(contains)s::jsonb is null or j.payload @> %(contains)s::jsonb) as hit,
                      row_number() over (order by j.id desc) as n
                 from brooq.jobs j
                where j.topic = t.topic
                  and j.state = s.state
                  and j.state in ('failed', 'dead', 'canceled')  -- the index's predicate
                  and j.id < %(id)s::bigint
                order by j.id desc
                limit %(scan)s::integer) as x
        where x.hit or x.n = %(scan)s::integer
        limit %(keep)s::integer) as y
"""

# Done: job_terminal_idx (topic, updated_at), the last finished first; dead and
# canceled rows of the index are read and passed over.
DASHBOARD_BROWSE_DONE: LiteralString = """
select t.topic as grp, y.id, y.hit, y.n,
       null::integer as priority, null::timestamptz as available_at, y.updated_at
  from unnest(%(topics)s::text[]) as t(topic)
 cross join lateral (
       select x.id, x.updated_at, x.hit, x.n
         from (select j.id, j.updated_at,
                      (j.state = 'done'
                       and (%(contains)s::jsonb is null or j.payload @> %(contains)s::jsonb)) as hit,
                      row_number() over (order by j.updated_at desc, j.id desc) as n
                 from brooq.jobs j
                where j.topic = t.topic
                  and j.state in ('done', 'dead', 'canceled')  -- the index's predicate
                  and (j.updated_at, j.id) < (%(at)s::timestamptz, %(id)s::bigint)
                order by j.updated_at desc, j.id desc
                limit %(scan)s::integer) as x
        where x.hit or x.n = %(scan)s::integer
        limit %(keep)s::integer) as y
"""

# Pending (ready now) and scheduled (pending, its time to come): job_ready_idx
# (topic, priority desc, available_at, id), in the order a claim takes them. The
# cursor (priority, available_at, id) splits a topic's range in two: the rest of its
# priority, then the lower priorities, each an index range.
DASHBOARD_BROWSE_READY: LiteralString = """
select t.topic as grp, y.id, y.hit, y.n, y.priority, y.available_at, null::timestamptz as updated_at
  from unnest(%(topics)s::text[]) as t(topic)
 cross join (select brooq._now() as now) as c
 cross join lateral (
       select x.id, x.priority, x.available_at, x.hit, x.n
         from (select r.id, r.priority, r.available_at,
                      (r.state = 'pending' and (r.available_at <= c.now) = %(ready)s::boolean
                       and (%(contains)s::jsonb is null or r.payload @> %(contains)s::jsonb)) as hit,
                      row_number() over (order by r.priority desc, r.available_at, r.id) as n
                 from ((select j.id, j.priority, j.available_at, j.state, j.payload
                          from brooq.jobs j
                         where j.topic = t.topic
                           and j.state in ('pending', 'failed')  -- the index's predicate
                           and j.priority = %(priority)s::integer
                           and (j.available_at, j.id) > (%(at)s::timestamptz, %(id)s::bigint)
                         order by j.available_at, j.id
                         limit %(scan)s::integer)
                       union all
                       (select j.id, j.priority, j.available_at, j.state, j.payload
                          from brooq.jobs j
                         where j.topic = t.topic
                           and j.state in ('pending', 'failed')
                           and j.priority < %(priority)s::integer
                         order by j.priority desc, j.available_at, j.id
                         limit %(scan)s::integer)) as r
                order by r.priority desc, r.available_at, r.id
                limit %(scan)s::integer) as x
        where x.hit or x.n = %(scan)s::integer
        limit %(keep)s::integer) as y
"""

# Processing: job_lease_idx (every job in flight, as many as the workers hold), newest
# first, one group.
DASHBOARD_BROWSE_PROCESSING: LiteralString = """
select 'processing' as grp, x.id, x.hit, x.n,
       null::integer as priority, null::timestamptz as available_at, null::timestamptz as updated_at
  from (select j.id,
               (%(contains)s::jsonb is null or j.payload @> %(contains)s::jsonb) as hit,
               row_number() over (order by j.id desc) as n
          from brooq.jobs j
         where j.locked_until is not null  -- the index's predicate
           and j.topic = any(%(topics)s::text[])
           and j.id < %(id)s::bigint
         order by j.id desc
         limit %(scan)s::integer) as x
 where x.hit or x.n = %(scan)s::integer
 limit %(keep)s::integer
"""

# Waiting (workflows): no index holds them, so the newest jobs of every topic by the
# primary key, newest first, one group: at most %(scan)s of them a page.
DASHBOARD_BROWSE_WAITING: LiteralString = """
select 'waiting' as grp, x.id, x.hit, x.n,
       null::integer as priority, null::timestamptz as available_at, null::timestamptz as updated_at
  from (select j.id,
               (j.state = 'waiting' and j.topic = any(%(topics)s::text[])
                and (%(contains)s::jsonb is null or j.payload @> %(contains)s::jsonb)) as hit,
               row_number() over (order by j.id desc) as n
          from brooq.jobs j
         where j.id < %(id)s::bigint
         order by j.id desc
         limit %(scan)s::integer) as x
 where x.hit or x.n = %(scan)s::integer
 limit %(keep)s::integer
"""

# An idempotency key: one job per topic at most (job_idempotency_key_idx), in the
# states asked for (%(ready)s: NULL any time, true ready now, false scheduled).
DASHBOARD_BROWSE_KEY: LiteralString = """
select 'key' as grp, j.id, true as hit, row_number() over (order by j.id desc) as n,
       null::integer as priority, null::timestamptz as available_at, null::timestamptz as updated_at
  from brooq.jobs j
 where j.topic = any(%(topics)s::text[])
   and j.idempotency_key = %(key)s::text
   and j.state = any(%(states)s::text[])
   and (%(ready)s::boolean is null or (j.available_at <= (select brooq._now())) = %(ready)s::boolean)
   and (%(contains)s::jsonb is null or j.payload @> %(contains)s::jsonb)
 order by j.id desc
 limit %(keep)s::integer
"""

# What the jobs page shows of the jobs it found, by primary key.
DASHBOARD_BROWSE_SHOW: LiteralString = """
select id, topic, state, attempts, max_attempts, updated_at, left(last_error, 400) as last_error,
       priority, idempotency_key as key, available_at, created_at, left(payload::text, 200) as payload
  from brooq.jobs
 where id = any(%(ids)s::bigint[])
"""

# Bulk cancel and re-drive (/jobs/bulk): the jobs the filters found (at most the cap,
# docs/dashboard.md), each through brooq.cancel or brooq.retry; how many changed.
DASHBOARD_BULK_CANCEL: LiteralString = """
select count(*) filter (where brooq.cancel(i.id)) from unnest(%(ids)s::bigint[]) as i(id)
"""

DASHBOARD_BULK_RETRY: LiteralString = """
select count(*) filter (where brooq.retry(i.id)) from unnest(%(ids)s::bigint[]) as i(id)
"""

# A job's workflow tree: its ancestors and its descendants, %(depth)s levels each way,
# at most %(fan)s parents or children of each node (the lowest ids), %(nodes)s nodes
# each way, ids and states only (via: the node it was reached from).
DASHBOARD_JOB_TREE: LiteralString = """
with recursive up(id, state, via, depth) as (
       select p.id, p.state, %(id)s::bigint, 1
         from (select p.id, p.state::text as state from brooq.parents(%(id)s::bigint) as p
                order by p.id limit %(fan)s::integer) as p
       union all
       select p.id, p.state, u.id, u.depth + 1
         from up as u
        cross join lateral (select p.id, p.state::text as state from brooq.parents(u.id) as p
                             order by p.id limit %(fan)s::integer) as p
        where u.depth < %(depth)s::integer
), down(id, state, via, depth) as (
       select c.id, c.state::text, %(id)s::bigint, 1
         from brooq.children(%(id)s::bigint, %(fan)s::integer) as c
       union all
       select c.id, c.state::text, d.id, d.depth + 1
         from down as d
        cross join lateral brooq.children(d.id, %(fan)s::integer) as c
        where d.depth < %(depth)s::integer
)
(select 'up' as way, id, state, via, depth from up limit %(nodes)s::integer)
union all
(select 'down' as way, id, state, via, depth from down limit %(nodes)s::integer)
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
