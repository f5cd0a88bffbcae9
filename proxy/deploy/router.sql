-- Deploy brooq_proxy:router to pg
-- The brooq.* names a producer or an admin calls, in a router: each one runs on
-- the partition(s) that hold the data, through PL/Proxy. A client points its DSN
-- at the router instead of one brooq database and calls the same functions.
--
-- Not here: claim, settle, settle_many, heartbeat, reap and the other worker
-- functions. Workers connect to every partition directly (brooq worker --dsn A
-- --dsn B ...): a lease lives on one partition, and a hop through the router
-- would add a connection per call for nothing.
--
-- Every remote call runs in its own transaction on its partition (PL/Proxy
-- autocommits there): an enqueue through the router commits even if the
-- caller's transaction then rolls back. The functions are SECURITY INVOKER:
-- PL/Proxy connects to a partition as the caller (user=current_user), so the
-- partition checks the same grants as on a single node.

begin;

create schema brooq;
comment on schema brooq is
'A brooq router: the producer and admin functions of brooq, run on the partitions by PL/Proxy.';
revoke all on schema brooq from public;
grant usage on schema brooq to brooq_producer, brooq_worker, brooq_admin;

create type brooq.enqueued as (
    id      bigint,
    created boolean
);
comment on type brooq.enqueued is 'Result of enqueue: id, and created = false when the idempotency key already existed.';

-- The columns of a partition's brooq.topic that declare_topic returns.
create type brooq.topic as (
    name              text,
    max_attempts      integer,
    backoff_base      interval,
    backoff_max       interval,
    retention         interval,
    max_payload_bytes integer,
    notify            boolean,
    paused            boolean,
    created_at        timestamptz,
    updated_at        timestamptz,
    max_lease         interval,
    max_lease_losses  integer,
    max_in_flight     integer,
    rate              integer,
    per               interval,
    max_execution     interval,
    retain_done       boolean,
    retain_payload    boolean
);
comment on type brooq.topic is 'A topic''s settings, as brooq.declare_topic returns them.';

-- A job and its outcome: the columns of a partition's brooq.jobs view.
create type brooq.job_fate as (
    id              bigint,
    topic           text,
    state           text,
    attempts        integer,
    max_attempts    integer,
    priority        integer,
    payload         jsonb,
    idempotency_key text,
    available_at    timestamptz,
    created_at      timestamptz,
    updated_at      timestamptz,
    locked_by       text,
    locked_until    timestamptz,
    last_error      text,
    result          jsonb,
    progress        jsonb,
    group_key       text
);
comment on type brooq.job_fate is 'A job and its outcome, as the view brooq.jobs of its partition shows it.';

-- A workflow stays on one partition: a job with parents goes to its first parent's
-- partition (a parent on another partition is unknown there: 23503); else
-- brooq_proxy.route(topic, idempotency_key, group_key).
create function brooq_proxy.route_after(topic text, idempotency_key text, group_key text, after bigint[])
returns integer
language sql
volatile
set search_path = pg_catalog, pg_temp
as $$
    select case when pg_catalog.cardinality(route_after.after) > 0 and route_after.after[1] is not null
                then brooq_proxy.partition_of(route_after.after[1])
                else brooq_proxy.route(route_after.topic, route_after.idempotency_key, route_after.group_key)
           end;
$$;
comment on function brooq_proxy.route_after(text, text, text, bigint[]) is
'Where a new job goes: its first parent''s partition (a workflow stays on one partition), else brooq_proxy.route.';

-- enqueue: one partition, chosen by brooq_proxy.route_after(topic, idempotency_key, group_key, after).
create function brooq.enqueue(
    topic text,
    payload jsonb default '{}',
    idempotency_key text default null,
    available_at timestamptz default null,
    priority integer default 0,
    delay interval default null,
    group_key text default null,
    trace_context jsonb default null,
    after bigint[] default null,
    after_policy text default 'cancel')
returns setof brooq.enqueued
language plproxy
as $$
    cluster 'brooq';
    run on brooq_proxy.route_after(topic, idempotency_key, group_key, after);
$$;
comment on function brooq.enqueue(text, jsonb, text, timestamptz, integer, interval, text, jsonb, bigint[], text) is
'Router: enqueues on the partition of its first parent (after), of hash(topic, group) or hash(topic, key), or on a random one without either.';

-- enqueue_many: the batch split by partition, one call per partition, in
-- parallel; the answer put back in input order by the ordinals sent along.
create function brooq_proxy._enqueue_many_split(
    topic text,
    payloads jsonb[],
    idempotency_keys text[],
    ordinals integer[],
    routes integer[],
    available_at timestamptz,
    priority integer,
    delay interval,
    group_keys text[],
    trace_context jsonb,
    out ordinal integer,
    out id bigint,
    out created boolean)
returns setof record
language plproxy
as $$
    cluster 'brooq';
    split payloads, idempotency_keys, ordinals, routes, group_keys;
    run on routes;
    select o.ord as ordinal, e.id as id, e.created as created
      from brooq.enqueue_many(topic, payloads, idempotency_keys, available_at, priority, delay,
                              group_keys, trace_context)
           with ordinality as e(id, created, n)
      join pg_catalog.unnest(ordinals) with ordinality as o(ord, n) on o.n = e.n;
$$;
comment on function brooq_proxy._enqueue_many_split(text, jsonb[], text[], integer[], integer[], timestamptz, integer, interval, text[], jsonb) is
'Private to the router''s brooq.enqueue_many: the batch split by partition.';

-- The whole batch to one partition, unsplit: used for the arguments a partition
-- rejects (NULLs, bad shapes), so that the caller gets its documented error.
create function brooq_proxy._enqueue_many_any(
    topic text,
    payloads jsonb[],
    idempotency_keys text[],
    available_at timestamptz,
    priority integer,
    delay interval,
    group_keys text[],
    trace_context jsonb)
returns setof brooq.enqueued
language plproxy
as $$
    cluster 'brooq';
    run on any;
    target brooq.enqueue_many;
$$;
comment on function brooq_proxy._enqueue_many_any(text, jsonb[], text[], timestamptz, integer, interval, text[], jsonb) is
'Private to the router''s brooq.enqueue_many: the whole call to one partition, for its errors.';

-- A workflow's batch, whole, to one partition: that of its first parent named by id
-- (a parent on another partition is unknown there: 23503), or a random one.
create function brooq_proxy._enqueue_many_on(
    part integer,
    topic text,
    payloads jsonb[],
    idempotency_keys text[],
    available_at timestamptz,
    priority integer,
    delay interval,
    group_keys text[],
    trace_context jsonb,
    after_child integer[],
    after_parent bigint[],
    after_policy text)
returns setof brooq.enqueued
language plproxy
as $$
    cluster 'brooq';
    run on part;
    select * from brooq.enqueue_many(topic, payloads, idempotency_keys, available_at, priority, delay,
                                     group_keys, trace_context, after_child, after_parent, after_policy);
$$;
comment on function brooq_proxy._enqueue_many_on(integer, text, jsonb[], text[], timestamptz, integer, interval, text[], jsonb, integer[], bigint[], text) is
'Private to the router''s brooq.enqueue_many: a batch with edges, whole, to one partition.';

create function brooq.enqueue_many(
    topic text,
    payloads jsonb[],
    idempotency_keys text[] default null,
    available_at timestamptz default null,
    priority integer default 0,
    delay interval default null,
    group_keys text[] default null,
    trace_context jsonb default null,
    after_child integer[] default null,
    after_parent bigint[] default null,
    after_policy text default 'cancel')
returns setof brooq.enqueued
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
    v_n integer := coalesce(cardinality(enqueue_many.payloads), 0);
    v_keys text[];
    v_groups text[];
    v_ordinals integer[];
    v_routes integer[];
begin
    if enqueue_many.after_child is not null or enqueue_many.after_parent is not null then
        -- A workflow: the whole batch on one partition, which checks the edges.
        return query select * from brooq_proxy._enqueue_many_on(
            coalesce((select brooq_proxy.partition_of(min(p)) from unnest(enqueue_many.after_parent) as p where p > 0),
                     brooq_proxy.route(enqueue_many.topic, null, null)),
            enqueue_many.topic, enqueue_many.payloads, enqueue_many.idempotency_keys,
            enqueue_many.available_at, enqueue_many.priority, enqueue_many.delay,
            enqueue_many.group_keys, enqueue_many.trace_context,
            enqueue_many.after_child, enqueue_many.after_parent, enqueue_many.after_policy);
        return;
    end if;
    if enqueue_many.topic is null or enqueue_many.payloads is null or enqueue_many.priority is null
        or array_ndims(enqueue_many.payloads) > 1 or array_ndims(enqueue_many.idempotency_keys) > 1
        or v_n > 10000 or array_position(enqueue_many.payloads, null) is not null
        or array_ndims(enqueue_many.group_keys) > 1
        or (enqueue_many.idempotency_keys is not null
            and cardinality(enqueue_many.idempotency_keys) <> v_n)
        or (enqueue_many.group_keys is not null
            and cardinality(enqueue_many.group_keys) <> v_n) then
        return query select * from brooq_proxy._enqueue_many_any(
            enqueue_many.topic, enqueue_many.payloads, enqueue_many.idempotency_keys,
            enqueue_many.available_at, enqueue_many.priority, enqueue_many.delay,
            enqueue_many.group_keys, enqueue_many.trace_context);
        return;
    end if;
    if v_n = 0 then
        return;
    end if;
    -- The routes computed here in one statement: PL/Proxy would otherwise run a
    -- query per element to evaluate RUN ON (a third of the throughput).
    v_keys := coalesce(enqueue_many.idempotency_keys, array_fill(null::text, array[v_n]));
    v_groups := coalesce(enqueue_many.group_keys, array_fill(null::text, array[v_n]));
    select array_agg(k.ord::integer order by k.ord),
           array_agg(brooq_proxy.route(enqueue_many.topic, k.key, k.grp) order by k.ord)
      into v_ordinals, v_routes
      from unnest(v_keys, v_groups) with ordinality as k(key, grp, ord);
    return query
    select s.id, s.created
      from brooq_proxy._enqueue_many_split(
               enqueue_many.topic, enqueue_many.payloads, v_keys, v_ordinals, v_routes,
               enqueue_many.available_at, enqueue_many.priority, enqueue_many.delay, v_groups,
               enqueue_many.trace_context) as s
     order by s.ordinal;
end
$$;
comment on function brooq.enqueue_many(text, jsonb[], text[], timestamptz, integer, interval, text[], jsonb, integer[], bigint[], text) is
'Router: splits the batch by partition (hash of topic and group or key, random without either) and answers in input order.';

-- declare_topic: on every partition (an upsert, so a partial failure is retried
-- by calling it again); returns the topic as partition 0 has it.
create function brooq_proxy._declare_topic_all(
    name text,
    max_attempts integer,
    backoff_base interval,
    backoff_max interval,
    retention interval,
    max_payload_bytes integer,
    notify boolean,
    max_lease interval,
    max_lease_losses integer,
    max_in_flight integer,
    rate integer,
    per interval,
    max_execution interval,
    retain_done boolean,
    retain_payload boolean)
returns setof brooq.topic
language plproxy
as $$
    cluster 'brooq';
    run on all;
    select t.name, t.max_attempts, t.backoff_base, t.backoff_max, t.retention,
           t.max_payload_bytes, t.notify, t.paused, t.created_at, t.updated_at,
           t.max_lease, t.max_lease_losses, t.max_in_flight, t.rate, t.per, t.max_execution,
           t.retain_done, t.retain_payload
      from brooq.declare_topic(name, max_attempts, backoff_base, backoff_max, retention,
                               max_payload_bytes, notify, max_lease, max_lease_losses,
                               max_in_flight, rate, per, max_execution, retain_done,
                               retain_payload) as t;
$$;
comment on function brooq_proxy._declare_topic_all(text, integer, interval, interval, interval, integer, boolean, interval, integer, integer, integer, interval, interval, boolean, boolean) is
'Private to the router''s brooq.declare_topic: the call on every partition.';

create function brooq.declare_topic(
    name text,
    max_attempts integer default 5,
    backoff_base interval default '1 second',
    backoff_max interval default '1 minute',
    retention interval default '30 days',
    max_payload_bytes integer default 1048576,
    notify boolean default true,
    max_lease interval default '1 hour',
    max_lease_losses integer default 5,
    max_in_flight integer default null,
    rate integer default null,
    per interval default null,
    max_execution interval default null,
    retain_done boolean default true,
    retain_payload boolean default true)
returns brooq.topic
language sql
set search_path = pg_catalog, pg_temp
as $$
    select * from brooq_proxy._declare_topic_all(
        declare_topic.name, declare_topic.max_attempts, declare_topic.backoff_base,
        declare_topic.backoff_max, declare_topic.retention, declare_topic.max_payload_bytes,
        declare_topic.notify, declare_topic.max_lease, declare_topic.max_lease_losses,
        declare_topic.max_in_flight, declare_topic.rate, declare_topic.per,
        declare_topic.max_execution, declare_topic.retain_done, declare_topic.retain_payload)
    limit 1;
$$;
comment on function brooq.declare_topic(text, integer, interval, interval, interval, integer, boolean, interval, integer, integer, integer, interval, interval, boolean, boolean) is
'Router: declares or updates the topic on every partition. max_in_flight and rate hold per partition.';

-- alter_topic: on every partition, as declare_topic; returns the topic as partition 0 has it.
create function brooq_proxy._alter_topic_all(
    name text,
    max_attempts integer,
    backoff_base interval,
    backoff_max interval,
    retention interval,
    max_payload_bytes integer,
    notify boolean,
    max_lease interval,
    max_lease_losses integer,
    max_in_flight integer,
    rate integer,
    per interval,
    max_execution interval,
    retain_done boolean,
    retain_payload boolean,
    clear text[])
returns setof brooq.topic
language plproxy
as $$
    cluster 'brooq';
    run on all;
    select t.name, t.max_attempts, t.backoff_base, t.backoff_max, t.retention,
           t.max_payload_bytes, t.notify, t.paused, t.created_at, t.updated_at,
           t.max_lease, t.max_lease_losses, t.max_in_flight, t.rate, t.per, t.max_execution,
           t.retain_done, t.retain_payload
      from brooq.alter_topic(name, max_attempts, backoff_base, backoff_max, retention,
                             max_payload_bytes, notify, max_lease, max_lease_losses,
                             max_in_flight, rate, per, max_execution, retain_done,
                             retain_payload, clear) as t;
$$;
comment on function brooq_proxy._alter_topic_all(text, integer, interval, interval, interval, integer, boolean, interval, integer, integer, integer, interval, interval, boolean, boolean, text[]) is
'Private to the router''s brooq.alter_topic: the call on every partition.';

create function brooq.alter_topic(
    name text,
    max_attempts integer default null,
    backoff_base interval default null,
    backoff_max interval default null,
    retention interval default null,
    max_payload_bytes integer default null,
    notify boolean default null,
    max_lease interval default null,
    max_lease_losses integer default null,
    max_in_flight integer default null,
    rate integer default null,
    per interval default null,
    max_execution interval default null,
    retain_done boolean default null,
    retain_payload boolean default null,
    clear text[] default '{}')
returns brooq.topic
language sql
set search_path = pg_catalog, pg_temp
as $$
    select * from brooq_proxy._alter_topic_all(
        alter_topic.name, alter_topic.max_attempts, alter_topic.backoff_base,
        alter_topic.backoff_max, alter_topic.retention, alter_topic.max_payload_bytes,
        alter_topic.notify, alter_topic.max_lease, alter_topic.max_lease_losses,
        alter_topic.max_in_flight, alter_topic.rate, alter_topic.per,
        alter_topic.max_execution, alter_topic.retain_done, alter_topic.retain_payload,
        alter_topic.clear)
    limit 1;
$$;
comment on function brooq.alter_topic(text, integer, interval, interval, interval, integer, boolean, interval, integer, integer, integer, interval, interval, boolean, boolean, text[]) is
'Router: changes the settings given of the topic on every partition (a partial failure is retried by calling it again).';

-- pause_topic / resume_topic: on every partition; true when any changed.
create function brooq_proxy._set_paused_all(name text, paused boolean)
returns setof boolean
language plproxy
as $$
    cluster 'brooq';
    run on all;
    select case when paused then brooq.pause_topic(name) else brooq.resume_topic(name) end
           as _set_paused_all;
$$;
comment on function brooq_proxy._set_paused_all(text, boolean) is
'Private to the router''s pause_topic and resume_topic: the call on every partition.';

create function brooq.pause_topic(name text)
returns boolean
language sql
set search_path = pg_catalog, pg_temp
as $$
    select pg_catalog.bool_or(c) from brooq_proxy._set_paused_all(pause_topic.name, true) as c;
$$;
comment on function brooq.pause_topic(text) is
'Router: pauses the topic on every partition; true when that changed one.';

create function brooq.resume_topic(name text)
returns boolean
language sql
set search_path = pg_catalog, pg_temp
as $$
    select pg_catalog.bool_or(c) from brooq_proxy._set_paused_all(resume_topic.name, false) as c;
$$;
comment on function brooq.resume_topic(text) is
'Router: resumes the topic on every partition; true when that changed one.';

-- cancel, retry, job_fate: the partition encoded in the job id.
create function brooq.cancel(job_id bigint)
returns boolean
language plproxy
as $$
    cluster 'brooq';
    run on brooq_proxy.partition_of(job_id);
$$;
comment on function brooq.cancel(bigint) is
'Router: cancels the job on the partition its id names.';

create function brooq.retry(job_id bigint)
returns boolean
language plproxy
as $$
    cluster 'brooq';
    run on brooq_proxy.partition_of(job_id);
$$;
comment on function brooq.retry(bigint) is
'Router: re-drives the dead or canceled job on the partition its id names.';

create function brooq.job_fate(job_id bigint)
returns setof brooq.job_fate
language plproxy
as $$
    cluster 'brooq';
    run on brooq_proxy.partition_of(job_id);
    select j.id, j.topic, j.state::text as state, j.attempts, j.max_attempts, j.priority,
           j.payload, j.idempotency_key, j.available_at, j.created_at, j.updated_at,
           j.locked_by, j.locked_until, j.last_error, j.result, j.progress, j.group_key
      from brooq.jobs j
     where j.id = job_id;
$$;
comment on function brooq.job_fate(bigint) is
'Router: the job and its outcome (the row of brooq.jobs) from the partition its id names; no row when unknown.';

-- topic_stats: every partition's view, then summed per topic.
create function brooq_proxy.partition_topic_stats(
    out partition_id bigint,
    out topic text,
    out paused boolean,
    out pending bigint,
    out failed bigint,
    out ready bigint,
    out scheduled bigint,
    out processing bigint,
    out expired bigint,
    out oldest_ready_age interval,
    out max_in_flight integer,
    out rate integer,
    out per interval,
    out held_by_in_flight bigint,
    out held_by_rate bigint,
    out max_execution interval,
    out held_by_group bigint,
    out waiting bigint)
returns setof record
language plproxy
as $$
    cluster 'brooq';
    run on all;
    select (select pg_catalog.max(j.id) from brooq.jobs j) >> 48 as partition_id,
           s.topic, s.paused, s.pending, s.failed, s.ready, s.scheduled, s.processing, s.expired,
           s.oldest_ready_age, s.max_in_flight, s.rate, s.per,
           s.held_by_in_flight::bigint as held_by_in_flight, s.held_by_rate::bigint as held_by_rate,
           s.max_execution, s.held_by_group::bigint as held_by_group, s.waiting::bigint as waiting
      from brooq.topic_stats s;
$$;
comment on function brooq_proxy.partition_topic_stats() is
'Router: brooq.topic_stats of every partition, one row per partition and topic (partition_id: NULL before its first job).';

create view brooq.topic_stats as
select s.topic,
       pg_catalog.bool_or(s.paused) as paused,
       pg_catalog.sum(s.pending)::bigint as pending,
       pg_catalog.sum(s.failed)::bigint as failed,
       pg_catalog.sum(s.ready)::bigint as ready,
       pg_catalog.sum(s.scheduled)::bigint as scheduled,
       pg_catalog.sum(s.processing)::bigint as processing,
       pg_catalog.sum(s.expired)::bigint as expired,
       pg_catalog.max(s.oldest_ready_age) as oldest_ready_age,
       pg_catalog.max(s.max_in_flight) as max_in_flight,
       pg_catalog.max(s.rate) as rate,
       pg_catalog.max(s.per) as per,
       pg_catalog.sum(s.held_by_in_flight)::bigint as held_by_in_flight,
       pg_catalog.sum(s.held_by_rate)::bigint as held_by_rate,
       pg_catalog.max(s.max_execution) as max_execution,
       pg_catalog.sum(s.held_by_group)::bigint as held_by_group,
       pg_catalog.sum(s.waiting)::bigint as waiting,
       pg_catalog.count(*)::integer as partitions
  from brooq_proxy.partition_topic_stats() as s
 group by s.topic;
comment on view brooq.topic_stats is
'Router: brooq.topic_stats summed over every partition (paused when paused on any; the flow limits are per partition).';

-- topics: every partition's brooq.topics, one row per topic and settings: a topic
-- whose partitions disagree (a declaration that failed on some) shows once per
-- version, with the partitions that hold it.
create function brooq_proxy.partition_topics()
returns setof brooq.topic
language plproxy
as $$
    cluster 'brooq';
    run on all;
    select t.name, t.max_attempts, t.backoff_base, t.backoff_max, t.retention,
           t.max_payload_bytes, t.notify, t.paused, t.created_at, t.updated_at,
           t.max_lease, t.max_lease_losses, t.max_in_flight, t.rate, t.per, t.max_execution,
           t.retain_done, t.retain_payload
      from brooq.topics t;
$$;
comment on function brooq_proxy.partition_topics() is
'Router: brooq.topics of every partition, one row per partition and topic.';

create view brooq.topics as
select t.name, t.max_attempts, t.backoff_base, t.backoff_max, t.retention, t.max_payload_bytes,
       t.notify, t.max_lease, t.max_lease_losses, t.max_in_flight, t.rate, t.per, t.max_execution,
       t.retain_done, t.retain_payload,
       pg_catalog.bool_or(t.paused) as paused,
       pg_catalog.min(t.created_at) as created_at,
       pg_catalog.max(t.updated_at) as updated_at,
       pg_catalog.count(*)::integer as partitions
  from brooq_proxy.partition_topics() as t
 group by t.name, t.max_attempts, t.backoff_base, t.backoff_max, t.retention, t.max_payload_bytes,
          t.notify, t.max_lease, t.max_lease_losses, t.max_in_flight, t.rate, t.per, t.max_execution,
          t.retain_done, t.retain_payload;
comment on view brooq.topics is
'Router: brooq.topics of every partition, one row per topic and settings (partitions: how many hold them; paused when paused on any).';

revoke all on function brooq.enqueue(text, jsonb, text, timestamptz, integer, interval, text, jsonb, bigint[], text) from public;
revoke all on function brooq.enqueue_many(text, jsonb[], text[], timestamptz, integer, interval, text[], jsonb, integer[], bigint[], text) from public;
revoke all on function brooq_proxy._enqueue_many_split(text, jsonb[], text[], integer[], integer[], timestamptz, integer, interval, text[], jsonb) from public;
revoke all on function brooq_proxy._enqueue_many_any(text, jsonb[], text[], timestamptz, integer, interval, text[], jsonb) from public;
revoke all on function brooq_proxy._enqueue_many_on(integer, text, jsonb[], text[], timestamptz, integer, interval, text[], jsonb, integer[], bigint[], text) from public;
revoke all on function brooq_proxy.route_after(text, text, text, bigint[]) from public;
grant execute on function brooq.enqueue(text, jsonb, text, timestamptz, integer, interval, text, jsonb, bigint[], text),
                          brooq.enqueue_many(text, jsonb[], text[], timestamptz, integer, interval, text[], jsonb, integer[], bigint[], text),
                          brooq_proxy._enqueue_many_split(text, jsonb[], text[], integer[], integer[], timestamptz, integer, interval, text[], jsonb),
                          brooq_proxy._enqueue_many_any(text, jsonb[], text[], timestamptz, integer, interval, text[], jsonb),
                          brooq_proxy._enqueue_many_on(integer, text, jsonb[], text[], timestamptz, integer, interval, text[], jsonb, integer[], bigint[], text),
                          brooq_proxy.route_after(text, text, text, bigint[])
   to brooq_producer;

revoke all on function brooq_proxy._declare_topic_all(text, integer, interval, interval, interval, integer, boolean, interval, integer, integer, integer, interval, interval, boolean, boolean) from public;
revoke all on function brooq.declare_topic(text, integer, interval, interval, interval, integer, boolean, interval, integer, integer, integer, interval, interval, boolean, boolean) from public;
revoke all on function brooq_proxy._alter_topic_all(text, integer, interval, interval, interval, integer, boolean, interval, integer, integer, integer, interval, interval, boolean, boolean, text[]) from public;
revoke all on function brooq.alter_topic(text, integer, interval, interval, interval, integer, boolean, interval, integer, integer, integer, interval, interval, boolean, boolean, text[]) from public;
revoke all on function brooq_proxy._set_paused_all(text, boolean) from public;
revoke all on function brooq.pause_topic(text) from public;
revoke all on function brooq.resume_topic(text) from public;
revoke all on function brooq.cancel(bigint) from public;
revoke all on function brooq.retry(bigint) from public;
grant execute on function brooq_proxy._declare_topic_all(text, integer, interval, interval, interval, integer, boolean, interval, integer, integer, integer, interval, interval, boolean, boolean),
                          brooq.declare_topic(text, integer, interval, interval, interval, integer, boolean, interval, integer, integer, integer, interval, interval, boolean, boolean),
                          brooq_proxy._alter_topic_all(text, integer, interval, interval, interval, integer, boolean, interval, integer, integer, integer, interval, interval, boolean, boolean, text[]),
                          brooq.alter_topic(text, integer, interval, interval, interval, integer, boolean, interval, integer, integer, integer, interval, interval, boolean, boolean, text[]),
                          brooq_proxy._set_paused_all(text, boolean),
                          brooq.pause_topic(text), brooq.resume_topic(text),
                          brooq.cancel(bigint), brooq.retry(bigint)
   to brooq_admin;

revoke all on function brooq.job_fate(bigint) from public;
grant execute on function brooq.job_fate(bigint) to brooq_producer, brooq_worker, brooq_admin;

revoke all on function brooq_proxy.partition_topic_stats() from public;
revoke all on brooq.topic_stats from public;
grant execute on function brooq_proxy.partition_topic_stats() to brooq_worker, brooq_admin;
grant select on brooq.topic_stats to brooq_worker, brooq_admin;

revoke all on function brooq_proxy.partition_topics() from public;
revoke all on brooq.topics from public;
grant execute on function brooq_proxy.partition_topics() to brooq_worker, brooq_admin;
grant select on brooq.topics to brooq_worker, brooq_admin;

commit;
