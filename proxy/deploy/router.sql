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
-- caller's transaction then rolls back. A bulk enqueue whose jobs go to several
-- partitions is staged, then published (brooq.enqueue_many below): either every
-- job of the call becomes claimable or none ever runs. The functions are
-- SECURITY INVOKER: PL/Proxy connects to a partition as the caller
-- (user=current_user), so the partition checks the same grants as on a single node.
--
-- A partition that cannot be reached fails a call with a retryable SQLSTATE:
-- 08001 when PL/Proxy could not connect to it, 08006 when the connection failed
-- during the call (PL/Proxy itself raises XX000; brooq_proxy._reraise maps it).

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

-- Errors: a partition's error keeps its SQLSTATE (PL/Proxy re-raises it, prefixed);
-- PL/Proxy's own errors (XX000, "PL/Proxy function ...") and a partition backend
-- terminated under the call (57P01-57P03) mean that a partition could not be
-- reached: they become 08001 (it could not be connected to: nothing was sent) or
-- 08006 (the connection failed during the call), with retry_hint as the hint.
create function brooq_proxy._reraise(state text, message text, detail text, hint text, retry_hint text)
returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
begin
    _reraise.detail := nullif(_reraise.detail, '');  -- GET STACKED DIAGNOSTICS gives '' for none
    _reraise.hint := nullif(_reraise.hint, '');
    if (_reraise.state = 'XX000' and _reraise.message like 'PL/Proxy function %')
        or _reraise.state in ('57P01', '57P02', '57P03') then
        if _reraise.message ~ '(PQconnectStart|PQconnectPoll|connect timeout)' then
            raise exception 'a partition could not be reached: %', left(_reraise.message, 500)
                using errcode = 'sqlclient_unable_to_establish_sqlconnection', hint = _reraise.retry_hint;
        end if;
        raise exception 'the connection to a partition failed during the call: %', left(_reraise.message, 500)
            using errcode = 'connection_failure', hint = _reraise.retry_hint;
    end if;
    -- (a RAISE option cannot be NULL, and an empty one would still print)
    if _reraise.detail is null and _reraise.hint is null then
        raise exception using errcode = _reraise.state, message = _reraise.message;
    elsif _reraise.detail is null then
        raise exception using errcode = _reraise.state, message = _reraise.message, hint = _reraise.hint;
    elsif _reraise.hint is null then
        raise exception using errcode = _reraise.state, message = _reraise.message, detail = _reraise.detail;
    end if;
    raise exception using errcode = _reraise.state, message = _reraise.message,
                          detail = _reraise.detail, hint = _reraise.hint;
end
$$;
comment on function brooq_proxy._reraise(text, text, text, text, text) is
'Private: re-raises an error caught around a PL/Proxy call, a partition out of reach as 08001 or 08006 with retry_hint.';

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

-- declare_topic, alter_topic, pause_topic and resume_topic hold the partition list
-- (ROW SHARE) for their transaction: brooq_proxy.add_partition (EXCLUSIVE) copies
-- the topics to a new partition either before such a call or after it, never
-- during it, so a new partition never misses a topic's change.
create function brooq_proxy._hold_partitions()
returns void
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
begin
    lock table brooq_proxy.partition in row share mode;
end
$$;
comment on function brooq_proxy._hold_partitions() is
'Private: the topic calls of the router wait for an add_partition under way, and it for them.';

-- enqueue: one partition, chosen by brooq_proxy.route_after(topic, idempotency_key, group_key, after).
create function brooq_proxy._enqueue_on(
    topic text,
    payload jsonb,
    idempotency_key text,
    available_at timestamptz,
    priority integer,
    delay interval,
    group_key text,
    trace_context jsonb,
    after bigint[],
    after_policy text)
returns setof brooq.enqueued
language plproxy
as $$
    cluster 'brooq';
    run on brooq_proxy.route_after(topic, idempotency_key, group_key, after);
    target brooq.enqueue;
$$;
comment on function brooq_proxy._enqueue_on(text, jsonb, text, timestamptz, integer, interval, text, jsonb, bigint[], text) is
'Private to the router''s brooq.enqueue: the call on the partition of the route.';

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
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
    v_state text; v_message text; v_detail text; v_hint text;
begin
    return query select * from brooq_proxy._enqueue_on(
        enqueue.topic, enqueue.payload, enqueue.idempotency_key, enqueue.available_at,
        enqueue.priority, enqueue.delay, enqueue.group_key, enqueue.trace_context,
        enqueue.after, enqueue.after_policy);
exception when others then
    get stacked diagnostics v_state = returned_sqlstate, v_message = message_text,
                            v_detail = pg_exception_detail, v_hint = pg_exception_hint;
    perform brooq_proxy._reraise(v_state, v_message, v_detail, v_hint,
        'Retry later. On 08006 the job may have been enqueued before the connection failed: with an idempotency key a retry cannot enqueue it twice.');
end
$$;
comment on function brooq.enqueue(text, jsonb, text, timestamptz, integer, interval, text, jsonb, bigint[], text) is
'Router: enqueues on the partition of its first parent (after), of hash(topic, group) or hash(topic, key), or on a random one without either. Errors: the partition''s; 08001/08006 the partition unreachable.';

-- enqueue_many: the batch split by partition, one call per partition, in
-- parallel; the answer put back in input order by the ordinals sent along.
-- routes holds partition numbers (brooq.enqueue_many computes them), which
-- PL/Proxy's modular mapping keeps as they are.
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
'Private to the router''s brooq.enqueue_many: a batch that goes to one partition.';

-- The same, staged: each partition's share inserted unclaimable under the call id
-- (brooq.enqueue_staged on the partition), to be published or discarded everywhere.
create function brooq_proxy._enqueue_staged_split(
    call_id uuid,
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
      from brooq.enqueue_staged(call_id, topic, payloads, idempotency_keys, available_at, priority,
                                delay, group_keys, trace_context)
           with ordinality as e(id, created, n)
      join pg_catalog.unnest(ordinals) with ordinality as o(ord, n) on o.n = e.n;
$$;
comment on function brooq_proxy._enqueue_staged_split(uuid, text, jsonb[], text[], integer[], integer[], timestamptz, integer, interval, text[], jsonb) is
'Private to the router''s brooq.enqueue_many: a batch over several partitions, staged on each.';

-- A decision on a staged call (brooq.decide_staged: publish, force, fence,
-- discard): on each partition of parts at once, or on one partition.
create function brooq_proxy._decide_split(call_id uuid, parts integer[], decision text)
returns setof text
language plproxy
as $$
    cluster 'brooq';
    split parts;
    run on parts;
    select brooq.decide_staged(call_id, decision) as _decide_split;
$$;
comment on function brooq_proxy._decide_split(uuid, integer[], text) is
'Private: brooq.decide_staged on every partition named in parts, in parallel; one state per partition.';

create function brooq_proxy._decide_on(part integer, call_id uuid, decision text)
returns text
language plproxy
as $$
    cluster 'brooq';
    run on part;
    select brooq.decide_staged(call_id, decision) as _decide_on;
$$;
comment on function brooq_proxy._decide_on(integer, uuid, text) is
'Private: brooq.decide_staged on one partition.';

-- One partition at a time, each in its own subtransaction: the state after the
-- decision per element of parts, NULL where the partition could not be reached.
create function brooq_proxy._decide_each(call_id uuid, parts integer[], decision text)
returns text[]
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
    v_states text[] := '{}';
    v_part integer;
    v_state text;
begin
    foreach v_part in array _decide_each.parts loop
        begin
            v_state := brooq_proxy._decide_on(v_part, _decide_each.call_id, _decide_each.decision);
        exception when others then
            v_state := null;
        end;
        v_states := v_states || v_state;
    end loop;
    return v_states;
end
$$;
comment on function brooq_proxy._decide_each(uuid, integer[], text) is
'Private: brooq.decide_staged on each partition of parts in turn; NULL for a partition out of reach.';

-- Publishes a call staged on parts. Once one partition has published it the call
-- is decided: the others are published too, forced past a resolver's fence (a
-- resolver that finds a published share does the same). A partition out of reach
-- then is published by brooq_proxy.resolve() once it is back (a WARNING says so).
-- When every partition refused (a resolver fenced the call first), nothing of it
-- runs: 40001. When none published and some could not be reached: 08007.
create function brooq_proxy._publish(call_id uuid, parts integer[])
returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
    v_states text[];
    v_lost integer[];
begin
    begin
        select pg_catalog.array_agg(s) into v_states
          from brooq_proxy._decide_split(_publish.call_id, _publish.parts, 'publish') as s;
        if cardinality(v_states) = cardinality(_publish.parts) and v_states <@ array['published'] then
            return;
        end if;
    exception when others then
        null;  -- a partition out of reach: one partition at a time below
    end;
    v_states := brooq_proxy._decide_each(_publish.call_id, _publish.parts, 'publish');
    if 'published' = any(v_states) then
        for i in 1 .. cardinality(_publish.parts) loop
            if v_states[i] is distinct from 'published' then
                begin
                    v_states[i] := brooq_proxy._decide_on(_publish.parts[i], _publish.call_id, 'force');
                exception when others then
                    v_states[i] := null;
                end;
            end if;
        end loop;
        v_lost := array(select _publish.parts[i] from generate_series(1, cardinality(_publish.parts)) as i
                         where v_states[i] is distinct from 'published');
        if cardinality(v_lost) > 0 then
            raise warning 'bulk enqueue %: partitions % could not be reached to publish their jobs', _publish.call_id, v_lost
                using hint = 'The call succeeded: brooq_proxy.resolve() publishes those jobs once the partitions are back.';
        end if;
        return;
    end if;
    if array_position(v_states, null) is null then
        raise exception 'bulk enqueue % was abandoned before it was published: no job of it runs', _publish.call_id
            using errcode = 'serialization_failure',
                  hint = 'Enqueue the batch again.';
    end if;
    raise exception 'bulk enqueue %: its partitions could not be reached to publish it', _publish.call_id
        using errcode = 'transaction_resolution_unknown',
              hint = 'brooq_proxy.resolve() publishes or discards the whole call once they are back; enqueue again with the same idempotency keys to learn its ids.';
end
$$;
comment on function brooq_proxy._publish(uuid, integer[]) is
'Private to the router''s brooq.enqueue_many: publishes a staged call on every partition that holds it. Errors: 40001 abandoned (nothing runs), 08007 no partition could be reached.';

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

-- enqueue_many: all or nothing, as on one node. A batch whose jobs all go to one
-- partition is one transaction there. A batch over several partitions is staged on
-- each (its jobs inserted unclaimable under a random call id), then published on
-- each once every share is staged; when a share fails (a partition refuses or is
-- out of reach) the others are discarded and the error raised: no job of the call
-- ever runs. A call interrupted between the steps (the router's session dies) is
-- finished by brooq_proxy.resolve(): published everywhere when any partition
-- published it, else discarded everywhere. A batch with edges (a workflow) goes
-- whole to one partition (brooq_proxy._enqueue_many_on): one transaction there,
-- all or nothing without staging.
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
    v_count integer;
    v_keys text[];
    v_groups text[];
    v_ordinals integer[];
    v_routes integer[];
    v_pick integer;
    v_parts integer[];
    v_call uuid;
    v_ids bigint[];
    v_new boolean[];
    v_state text; v_message text; v_detail text; v_hint text;
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
        return;  -- (the partition raises the argument's error)
    end if;
    if v_n = 0 then
        return;
    end if;
    -- The partition of each element, computed here in one statement (PL/Proxy would
    -- otherwise run a query per element to evaluate RUN ON, a third of the
    -- throughput): a keyed or grouped element's route mapped as PL/Proxy maps a
    -- hash, |hash % count|. The elements with neither go together to one partition
    -- picked at random among the keyed elements' (or among all when there are
    -- none): a batch without keys is then one transaction on one partition, all or
    -- nothing without staging, and batches spread the load across calls.
    v_count := greatest(plproxy.get_cluster_version('brooq'), 1);
    v_keys := coalesce(enqueue_many.idempotency_keys, array_fill(null::text, array[v_n]));
    v_groups := coalesce(enqueue_many.group_keys, array_fill(null::text, array[v_n]));
    select pg_catalog.array_agg(k.ord::integer order by k.ord),
           pg_catalog.array_agg(case when k.key <> '' or k.grp <> ''
                                     then abs(brooq_proxy.route(enqueue_many.topic, k.key, k.grp) % v_count)
                                end order by k.ord)
      into v_ordinals, v_routes
      from unnest(v_keys, v_groups) with ordinality as k(key, grp, ord);
    if array_position(v_routes, null) is not null then
        v_pick := coalesce((select r from unnest(v_routes) as r where r is not null order by random() limit 1),
                           floor(random() * v_count)::integer);
        v_routes := array(select coalesce(u.r, v_pick) from unnest(v_routes) with ordinality as u(r, n) order by u.n);
    end if;
    v_parts := array(select distinct r from unnest(v_routes) as r order by r);
    if cardinality(v_parts) = 1 then
        -- One partition: one transaction there, all or nothing by itself.
        select pg_catalog.array_agg(s.id order by s.ordinal), pg_catalog.array_agg(s.created order by s.ordinal)
          into v_ids, v_new
          from brooq_proxy._enqueue_many_split(
                   enqueue_many.topic, enqueue_many.payloads, v_keys, v_ordinals, v_routes,
                   enqueue_many.available_at, enqueue_many.priority, enqueue_many.delay, v_groups,
                   enqueue_many.trace_context) as s;
    else
        v_call := gen_random_uuid();
        begin
            select pg_catalog.array_agg(s.id order by s.ordinal), pg_catalog.array_agg(s.created order by s.ordinal)
              into v_ids, v_new
              from brooq_proxy._enqueue_staged_split(
                       v_call, enqueue_many.topic, enqueue_many.payloads, v_keys, v_ordinals, v_routes,
                       enqueue_many.available_at, enqueue_many.priority, enqueue_many.delay, v_groups,
                       enqueue_many.trace_context) as s;
        exception when others then
            get stacked diagnostics v_state = returned_sqlstate, v_message = message_text,
                                    v_detail = pg_exception_detail, v_hint = pg_exception_hint;
            -- Nothing was published: discard the shares that were staged (a share on
            -- a partition out of reach stays unclaimable until brooq_proxy.resolve()).
            perform brooq_proxy._decide_each(v_call, v_parts, 'discard');
            perform brooq_proxy._reraise(v_state, v_message, v_detail, v_hint,
                'Retry later: no job of this call runs, enqueue the whole batch again.');
        end;
        perform brooq_proxy._publish(v_call, v_parts);
    end if;
    return query select u.id, u.created from unnest(v_ids, v_new) with ordinality as u(id, created, n) order by u.n;
exception when others then
    get stacked diagnostics v_state = returned_sqlstate, v_message = message_text,
                            v_detail = pg_exception_detail, v_hint = pg_exception_hint;
    perform brooq_proxy._reraise(v_state, v_message, v_detail, v_hint,
        'Retry later. On 08006 the batch may have been enqueued on its one partition before the connection failed: with idempotency keys a retry cannot enqueue it twice.');
end
$$;
comment on function brooq.enqueue_many(text, jsonb[], text[], timestamptz, integer, interval, text[], jsonb, integer[], bigint[], text) is
'Router: splits the batch by partition (hash of topic and group or key; the jobs with neither together on one partition; a batch with edges whole on the partition of its smallest parent id, or a random one) and answers in input order; all or nothing: a batch over several partitions is staged on each, then published on each. Errors: the partitions''; 08001/08006 a partition unreachable (nothing of a batch over several partitions runs); 40001 the call was abandoned; 08007 its partitions could not be reached to publish it.';

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
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
    v_topic brooq.topic;
    v_state text; v_message text; v_detail text; v_hint text;
begin
    perform brooq_proxy._hold_partitions();
    select * into v_topic from brooq_proxy._declare_topic_all(
        declare_topic.name, declare_topic.max_attempts, declare_topic.backoff_base,
        declare_topic.backoff_max, declare_topic.retention, declare_topic.max_payload_bytes,
        declare_topic.notify, declare_topic.max_lease, declare_topic.max_lease_losses,
        declare_topic.max_in_flight, declare_topic.rate, declare_topic.per,
        declare_topic.max_execution, declare_topic.retain_done, declare_topic.retain_payload)
    limit 1;
    return v_topic;
exception when others then
    get stacked diagnostics v_state = returned_sqlstate, v_message = message_text,
                            v_detail = pg_exception_detail, v_hint = pg_exception_hint;
    perform brooq_proxy._reraise(v_state, v_message, v_detail, v_hint,
        'Declare it again once the partition is back: the partitions reached have it already, a repeat is harmless.');
    return null;
end
$$;
comment on function brooq.declare_topic(text, integer, interval, interval, interval, integer, boolean, interval, integer, integer, integer, interval, interval, boolean, boolean) is
'Router: declares or updates the topic on every partition. max_in_flight and rate hold per partition. Errors: the partitions''; 08001/08006 a partition unreachable.';

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
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
    v_topic brooq.topic;
    v_state text; v_message text; v_detail text; v_hint text;
begin
    perform brooq_proxy._hold_partitions();
    select * into v_topic from brooq_proxy._alter_topic_all(
        alter_topic.name, alter_topic.max_attempts, alter_topic.backoff_base,
        alter_topic.backoff_max, alter_topic.retention, alter_topic.max_payload_bytes,
        alter_topic.notify, alter_topic.max_lease, alter_topic.max_lease_losses,
        alter_topic.max_in_flight, alter_topic.rate, alter_topic.per,
        alter_topic.max_execution, alter_topic.retain_done, alter_topic.retain_payload,
        alter_topic.clear)
    limit 1;
    return v_topic;
exception when others then
    get stacked diagnostics v_state = returned_sqlstate, v_message = message_text,
                            v_detail = pg_exception_detail, v_hint = pg_exception_hint;
    perform brooq_proxy._reraise(v_state, v_message, v_detail, v_hint,
        'Alter it again once the partition is back: a repeat is harmless.');
    return null;
end
$$;
comment on function brooq.alter_topic(text, integer, interval, interval, interval, integer, boolean, interval, integer, integer, integer, interval, interval, boolean, boolean, text[]) is
'Router: changes the settings given of the topic on every partition (a partial failure is retried by calling it again). Errors: the partitions''; 08001/08006 a partition unreachable.';

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

create function brooq_proxy._set_paused(name text, paused boolean)
returns boolean
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
    v_changed boolean;
    v_state text; v_message text; v_detail text; v_hint text;
begin
    perform brooq_proxy._hold_partitions();
    select pg_catalog.bool_or(c) into v_changed from brooq_proxy._set_paused_all(_set_paused.name, _set_paused.paused) as c;
    return v_changed;
exception when others then
    get stacked diagnostics v_state = returned_sqlstate, v_message = message_text,
                            v_detail = pg_exception_detail, v_hint = pg_exception_hint;
    perform brooq_proxy._reraise(v_state, v_message, v_detail, v_hint,
        'Call it again once the partition is back: a repeat is harmless.');
    return null;
end
$$;
comment on function brooq_proxy._set_paused(text, boolean) is
'Private to the router''s pause_topic and resume_topic.';

create function brooq.pause_topic(name text)
returns boolean
language sql
set search_path = pg_catalog, pg_temp
as $$
    select brooq_proxy._set_paused(pause_topic.name, true);
$$;
comment on function brooq.pause_topic(text) is
'Router: pauses the topic on every partition; true when that changed one. Errors: the partitions''; 08001/08006 a partition unreachable.';

create function brooq.resume_topic(name text)
returns boolean
language sql
set search_path = pg_catalog, pg_temp
as $$
    select brooq_proxy._set_paused(resume_topic.name, false);
$$;
comment on function brooq.resume_topic(text) is
'Router: resumes the topic on every partition; true when that changed one. Errors: the partitions''; 08001/08006 a partition unreachable.';

-- cancel, retry, job_fate: the partition encoded in the job id.
create function brooq_proxy._cancel_on(job_id bigint)
returns boolean
language plproxy
as $$
    cluster 'brooq';
    run on brooq_proxy.partition_of(job_id);
    select brooq.cancel(job_id) as _cancel_on;
$$;
comment on function brooq_proxy._cancel_on(bigint) is
'Private to the router''s brooq.cancel: the call on the partition the id names.';

create function brooq_proxy._retry_on(job_id bigint, rearm_children boolean, clear_steps boolean)
returns boolean
language plproxy
as $$
    cluster 'brooq';
    run on brooq_proxy.partition_of(job_id);
    select brooq.retry(job_id, rearm_children, clear_steps) as _retry_on;
$$;
comment on function brooq_proxy._retry_on(bigint, boolean, boolean) is
'Private to the router''s brooq.retry: the call on the partition the id names.';

create function brooq_proxy._job_fate_on(job_id bigint)
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
comment on function brooq_proxy._job_fate_on(bigint) is
'Private to the router''s brooq.job_fate: the call on the partition the id names.';

-- The by-id calls' errors: the partition's, or 08001/08006 when it is out of reach.
create function brooq.cancel(job_id bigint)
returns boolean
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
    v_state text; v_message text; v_detail text; v_hint text;
begin
    return brooq_proxy._cancel_on(cancel.job_id);
exception when others then
    get stacked diagnostics v_state = returned_sqlstate, v_message = message_text,
                            v_detail = pg_exception_detail, v_hint = pg_exception_hint;
    perform brooq_proxy._reraise(v_state, v_message, v_detail, v_hint,
        'Retry later: cancel is harmless to repeat.');
    return null;
end
$$;
comment on function brooq.cancel(bigint) is
'Router: cancels the job on the partition its id names. Errors: the partition''s; 08001/08006 the partition unreachable.';

create function brooq.retry(job_id bigint, rearm_children boolean default false, clear_steps boolean default false)
returns boolean
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
    v_state text; v_message text; v_detail text; v_hint text;
begin
    return brooq_proxy._retry_on(retry.job_id, retry.rearm_children, retry.clear_steps);
exception when others then
    get stacked diagnostics v_state = returned_sqlstate, v_message = message_text,
                            v_detail = pg_exception_detail, v_hint = pg_exception_hint;
    perform brooq_proxy._reraise(v_state, v_message, v_detail, v_hint,
        'Retry later: retry is harmless to repeat (false once the job is pending again).');
    return null;
end
$$;
comment on function brooq.retry(bigint, boolean, boolean) is
'Router: re-drives the dead or canceled job on the partition its id names. Errors: the partition''s; 08001/08006 the partition unreachable.';

create function brooq.job_fate(job_id bigint)
returns setof brooq.job_fate
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
    v_state text; v_message text; v_detail text; v_hint text;
begin
    return query select * from brooq_proxy._job_fate_on(job_fate.job_id);
exception when others then
    get stacked diagnostics v_state = returned_sqlstate, v_message = message_text,
                            v_detail = pg_exception_detail, v_hint = pg_exception_hint;
    perform brooq_proxy._reraise(v_state, v_message, v_detail, v_hint, 'Retry later.');
end
$$;
comment on function brooq.job_fate(bigint) is
'Router: the job and its outcome (the row of brooq.jobs) from the partition its id names; no row when unknown. Errors: 08001/08006 the partition unreachable.';
create function brooq_proxy._partition_topic_stats_all(
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
comment on function brooq_proxy._partition_topic_stats_all() is
'Private to brooq_proxy.partition_topic_stats: the call on every partition.';

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
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
    v_state text; v_message text; v_detail text; v_hint text;
begin
    return query select * from brooq_proxy._partition_topic_stats_all();
exception when others then
    get stacked diagnostics v_state = returned_sqlstate, v_message = message_text,
                            v_detail = pg_exception_detail, v_hint = pg_exception_hint;
    perform brooq_proxy._reraise(v_state, v_message, v_detail, v_hint, 'Retry later: the statistics need every partition.');
end
$$;
comment on function brooq_proxy.partition_topic_stats() is
'Router: brooq.topic_stats of every partition, one row per partition and topic (partition_id: NULL before its first job). Errors: 08001/08006 a partition unreachable.';

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
create function brooq_proxy._partition_topics_all()
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
comment on function brooq_proxy._partition_topics_all() is
'Private to brooq_proxy.partition_topics: the call on every partition.';

create function brooq_proxy.partition_topics()
returns setof brooq.topic
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
    v_state text; v_message text; v_detail text; v_hint text;
begin
    return query select * from brooq_proxy._partition_topics_all();
exception when others then
    get stacked diagnostics v_state = returned_sqlstate, v_message = message_text,
                            v_detail = pg_exception_detail, v_hint = pg_exception_hint;
    perform brooq_proxy._reraise(v_state, v_message, v_detail, v_hint, 'Retry later: the topics need every partition.');
end
$$;
comment on function brooq_proxy.partition_topics() is
'Router: brooq.topics of every partition, one row per partition and topic. Errors: 08001/08006 a partition unreachable.';

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


-- resolve: finishes the bulk enqueues that a router left between their steps (its
-- session died, or a partition was out of reach when it published or discarded).
-- For every call still staged on some partition since more than older_than: fence
-- it on every partition (a plain publish is then refused everywhere; a partition
-- that never had it gets a tombstone), then
--   - a partition had published it: publish it everywhere (forced past the fence);
--   - no partition had, and every partition answered: discard it everywhere;
--   - no partition had, and one could not be reached: leave it fenced (its jobs
--     stay unclaimable) for the next run.
-- Then, when every partition answered, forget the published and discarded calls
-- decided more than keep ago. Run it as a brooq_admin (it connects to every
-- partition as the caller), every minute or so: pg_cron on the router,
--   select cron.schedule('brooq-resolve', '* * * * *', 'select count(*) from brooq_proxy.resolve()');
-- Several resolvers, and routers, may run at once: they come to the same decision.
create type brooq_proxy.resolved as (
    call_id     uuid,
    outcome     text,
    unreachable integer[]
);
comment on type brooq_proxy.resolved is
'A call brooq_proxy.resolve() settled: outcome published, discarded, or fenced (a partition out of reach: next run), and the partitions it could not reach.';

create function brooq_proxy._open_calls_on(part integer, older_than interval, out call_id uuid, out old boolean)
returns setof record
language plproxy
as $$
    cluster 'brooq';
    run on part;
    select s.call_id, s.staged_at < pg_catalog.now() - older_than as old
      from brooq.staged_calls s
     where s.state in ('staged', 'fenced');
$$;
comment on function brooq_proxy._open_calls_on(integer, interval) is
'Private to brooq_proxy.resolve: the calls staged or fenced on one partition, and whether they are older than older_than.';

create function brooq_proxy._forget_on(part integer, keep interval, open_calls uuid[])
returns integer
language plproxy
as $$
    cluster 'brooq';
    run on part;
    select brooq.forget_staged(keep, open_calls) as _forget_on;
$$;
comment on function brooq_proxy._forget_on(integer, interval, uuid[]) is
'Private to brooq_proxy.resolve: brooq.forget_staged on one partition.';

create function brooq_proxy.resolve(older_than interval default '1 minute', keep interval default '1 hour')
returns setof brooq_proxy.resolved
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
    v_all integer[] := array(select generate_series(0, plproxy.get_cluster_version('brooq') - 1));
    v_part integer;
    v_down integer[] := '{}';
    v_open uuid[] := '{}';
    v_old uuid[] := '{}';
    v_call uuid;
    v_states text[];
    v_outcome text;
    r record;
begin
    if resolve.older_than is null or resolve.keep is null then
        raise exception 'brooq_proxy.resolve: older_than and keep must not be NULL'
            using errcode = 'null_value_not_allowed',
                  hint = 'Leave them out for 1 minute and 1 hour.';
    end if;
    foreach v_part in array v_all loop
        begin
            for r in select * from brooq_proxy._open_calls_on(v_part, resolve.older_than) loop
                v_open := v_open || r.call_id;
                if r.old then
                    v_old := v_old || r.call_id;
                end if;
            end loop;
        exception when others then
            v_down := v_down || v_part;
        end;
    end loop;
    foreach v_call in array array(select distinct c from unnest(v_old) as c) loop
        v_states := brooq_proxy._decide_each(v_call, v_all, 'fence');
        if 'published' = any(v_states) then
            for i in 1 .. cardinality(v_all) loop
                if v_states[i] = 'fenced' then
                    begin
                        v_states[i] := brooq_proxy._decide_on(v_all[i], v_call, 'force');
                    exception when others then
                        v_states[i] := null;
                    end;
                end if;
            end loop;
            v_outcome := 'published';
        elsif array_position(v_states, null) is null then
            for i in 1 .. cardinality(v_all) loop
                if v_states[i] = 'fenced' then
                    begin
                        v_states[i] := brooq_proxy._decide_on(v_all[i], v_call, 'discard');
                    exception when others then
                        v_states[i] := null;
                    end;
                end if;
            end loop;
            v_outcome := 'discarded';
        else
            v_outcome := 'fenced';
        end if;
        return next (v_call, v_outcome,
                     array(select v_all[i] from generate_series(1, cardinality(v_all)) as i
                            where v_states[i] is null or v_states[i] = 'fenced'))::brooq_proxy.resolved;
    end loop;
    if cardinality(v_down) = 0 then
        foreach v_part in array v_all loop
            begin
                perform brooq_proxy._forget_on(v_part, resolve.keep, v_open);
            exception when others then
                null;  -- the next run forgets them
            end;
        end loop;
    end if;
end
$$;
comment on function brooq_proxy.resolve(interval, interval) is
'Finishes the bulk enqueues left between their steps for more than older_than: published everywhere when a partition published one, else discarded everywhere (fenced meanwhile when a partition is out of reach); forgets decided calls older than keep. Run it as a brooq_admin. Errors: 22004 a NULL argument.';

-- A new partition gets the cluster's topics before it takes traffic: each topic in
-- the settings most recently written on any partition, paused when paused on any.
-- Sent to the partition over PL/Proxy's CONNECT (brooq_proxy.add_partition).
create function brooq_proxy._copy_topics(connstr text, topics jsonb)
returns integer
language plproxy
as $$
    connect connstr;
    select pg_catalog.count(*)::integer as _copy_topics
      from (select t.name, t.paused,
                   brooq.declare_topic(t.name, t.max_attempts, t.backoff_base, t.backoff_max, t.retention,
                                       t.max_payload_bytes, t.notify, t.max_lease, t.max_lease_losses,
                                       t.max_in_flight, t.rate, t.per, t.max_execution, t.retain_done,
                                       t.retain_payload) as declared
              from pg_catalog.jsonb_populate_recordset(null::brooq.topics, topics) as t
            offset 0) as x
     where not x.paused or brooq.pause_topic(x.name) is not null;
$$;
comment on function brooq_proxy._copy_topics(text, jsonb) is
'Private to brooq_proxy.add_partition: declares (and pauses) the cluster''s topics on a new partition.';

create function brooq_proxy._cluster_topics()
returns jsonb
language sql
set search_path = pg_catalog, pg_temp
as $$
    select coalesce(pg_catalog.jsonb_agg(pg_catalog.to_jsonb(l) - 'any_paused'
                                         || pg_catalog.jsonb_build_object('paused', l.any_paused)), '[]')
      from (select distinct on (t.name) t.*,
                   pg_catalog.bool_or(t.paused) over (partition by t.name) as any_paused
              from brooq_proxy.partition_topics() as t
             order by t.name, t.updated_at desc) as l;
$$;
comment on function brooq_proxy._cluster_topics() is
'Private to brooq_proxy.add_partition: every topic of the cluster, its latest settings, paused when paused on any partition.';

revoke all on function brooq_proxy._reraise(text, text, text, text, text) from public;
revoke all on function brooq_proxy._hold_partitions() from public;
grant execute on function brooq_proxy._reraise(text, text, text, text, text) to brooq_producer, brooq_worker, brooq_admin;
grant execute on function brooq_proxy._hold_partitions() to brooq_admin;

revoke all on function brooq.enqueue(text, jsonb, text, timestamptz, integer, interval, text, jsonb, bigint[], text) from public;
revoke all on function brooq_proxy._enqueue_on(text, jsonb, text, timestamptz, integer, interval, text, jsonb, bigint[], text) from public;
revoke all on function brooq.enqueue_many(text, jsonb[], text[], timestamptz, integer, interval, text[], jsonb, integer[], bigint[], text) from public;
revoke all on function brooq_proxy._enqueue_many_split(text, jsonb[], text[], integer[], integer[], timestamptz, integer, interval, text[], jsonb) from public;
revoke all on function brooq_proxy._enqueue_staged_split(uuid, text, jsonb[], text[], integer[], integer[], timestamptz, integer, interval, text[], jsonb) from public;
revoke all on function brooq_proxy._decide_split(uuid, integer[], text) from public;
revoke all on function brooq_proxy._decide_on(integer, uuid, text) from public;
revoke all on function brooq_proxy._decide_each(uuid, integer[], text) from public;
revoke all on function brooq_proxy._publish(uuid, integer[]) from public;
revoke all on function brooq_proxy._enqueue_many_any(text, jsonb[], text[], timestamptz, integer, interval, text[], jsonb) from public;
revoke all on function brooq_proxy._enqueue_many_on(integer, text, jsonb[], text[], timestamptz, integer, interval, text[], jsonb, integer[], bigint[], text) from public;
revoke all on function brooq_proxy.route_after(text, text, text, bigint[]) from public;
grant execute on function brooq.enqueue(text, jsonb, text, timestamptz, integer, interval, text, jsonb, bigint[], text),
                          brooq_proxy._enqueue_on(text, jsonb, text, timestamptz, integer, interval, text, jsonb, bigint[], text),
                          brooq.enqueue_many(text, jsonb[], text[], timestamptz, integer, interval, text[], jsonb, integer[], bigint[], text),
                          brooq_proxy._enqueue_many_split(text, jsonb[], text[], integer[], integer[], timestamptz, integer, interval, text[], jsonb),
                          brooq_proxy._enqueue_staged_split(uuid, text, jsonb[], text[], integer[], integer[], timestamptz, integer, interval, text[], jsonb),
                          brooq_proxy._decide_split(uuid, integer[], text),
                          brooq_proxy._decide_on(integer, uuid, text),
                          brooq_proxy._decide_each(uuid, integer[], text),
                          brooq_proxy._publish(uuid, integer[]),
                          brooq_proxy._enqueue_many_any(text, jsonb[], text[], timestamptz, integer, interval, text[], jsonb),
                          brooq_proxy._enqueue_many_on(integer, text, jsonb[], text[], timestamptz, integer, interval, text[], jsonb, integer[], bigint[], text),
                          brooq_proxy.route_after(text, text, text, bigint[])
   to brooq_producer;

revoke all on function brooq_proxy._declare_topic_all(text, integer, interval, interval, interval, integer, boolean, interval, integer, integer, integer, interval, interval, boolean, boolean) from public;
revoke all on function brooq.declare_topic(text, integer, interval, interval, interval, integer, boolean, interval, integer, integer, integer, interval, interval, boolean, boolean) from public;
revoke all on function brooq_proxy._alter_topic_all(text, integer, interval, interval, interval, integer, boolean, interval, integer, integer, integer, interval, interval, boolean, boolean, text[]) from public;
revoke all on function brooq.alter_topic(text, integer, interval, interval, interval, integer, boolean, interval, integer, integer, integer, interval, interval, boolean, boolean, text[]) from public;
revoke all on function brooq_proxy._set_paused_all(text, boolean) from public;
revoke all on function brooq_proxy._set_paused(text, boolean) from public;
revoke all on function brooq.pause_topic(text) from public;
revoke all on function brooq.resume_topic(text) from public;
revoke all on function brooq_proxy._cancel_on(bigint) from public;
revoke all on function brooq_proxy._retry_on(bigint, boolean, boolean) from public;
revoke all on function brooq.cancel(bigint) from public;
revoke all on function brooq.retry(bigint, boolean, boolean) from public;
grant execute on function brooq_proxy._declare_topic_all(text, integer, interval, interval, interval, integer, boolean, interval, integer, integer, integer, interval, interval, boolean, boolean),
                          brooq.declare_topic(text, integer, interval, interval, interval, integer, boolean, interval, integer, integer, integer, interval, interval, boolean, boolean),
                          brooq_proxy._alter_topic_all(text, integer, interval, interval, interval, integer, boolean, interval, integer, integer, integer, interval, interval, boolean, boolean, text[]),
                          brooq.alter_topic(text, integer, interval, interval, interval, integer, boolean, interval, integer, integer, integer, interval, interval, boolean, boolean, text[]),
                          brooq_proxy._set_paused_all(text, boolean), brooq_proxy._set_paused(text, boolean),
                          brooq.pause_topic(text), brooq.resume_topic(text),
                          brooq_proxy._cancel_on(bigint), brooq_proxy._retry_on(bigint, boolean, boolean),
                          brooq.cancel(bigint), brooq.retry(bigint, boolean, boolean)
   to brooq_admin;

revoke all on function brooq_proxy._job_fate_on(bigint) from public;
revoke all on function brooq.job_fate(bigint) from public;
grant execute on function brooq_proxy._job_fate_on(bigint), brooq.job_fate(bigint)
   to brooq_producer, brooq_worker, brooq_admin;

revoke all on function brooq_proxy._partition_topic_stats_all() from public;
revoke all on function brooq_proxy.partition_topic_stats() from public;
revoke all on brooq.topic_stats from public;
grant execute on function brooq_proxy._partition_topic_stats_all(), brooq_proxy.partition_topic_stats()
   to brooq_worker, brooq_admin;
grant select on brooq.topic_stats to brooq_worker, brooq_admin;

revoke all on function brooq_proxy._partition_topics_all() from public;
revoke all on function brooq_proxy.partition_topics() from public;
revoke all on brooq.topics from public;
grant execute on function brooq_proxy._partition_topics_all(), brooq_proxy.partition_topics() to brooq_worker, brooq_admin;
grant select on brooq.topics to brooq_worker, brooq_admin;

-- resolve: brooq_admin (it decides any call); add_partition's helpers: the owner's.
revoke all on function brooq_proxy._open_calls_on(integer, interval) from public;
revoke all on function brooq_proxy._forget_on(integer, interval, uuid[]) from public;
revoke all on function brooq_proxy.resolve(interval, interval) from public;
grant execute on function brooq_proxy._open_calls_on(integer, interval),
                          brooq_proxy._forget_on(integer, interval, uuid[]),
                          brooq_proxy.resolve(interval, interval)
   to brooq_admin;
revoke all on function brooq_proxy._copy_topics(text, jsonb) from public;
revoke all on function brooq_proxy._cluster_topics() from public;

commit;
