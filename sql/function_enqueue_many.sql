-- brooq.enqueue_many(topic, payloads, idempotency_keys, available_at, priority, delay,
--                    group_keys, trace_context, after_child, after_parent, after_policy)
--   -> setof brooq.enqueued, one row per payload, in input order
--
-- The bulk path: enqueues many jobs of one topic in one call, in the caller's
-- transaction. Same rules as brooq.enqueue, per element.
--
-- Parameters:
--   topic             a declared topic
--   payloads          jsonb[] of at most 10,000 elements, one dimension, no NULL
--                     elements; each at most max_payload_bytes
--   idempotency_keys  text[] of the same length, or NULL for no keys; NULL or
--                     '' elements = no key. A key repeated inside the batch gives
--                     every occurrence the first one's id (created = false after
--                     the first).
--   available_at, priority, delay, trace_context   as in brooq.enqueue, for every
--                     job (one trace context for the batch: one producer span)
--   group_keys        text[] of the same length, or NULL for no groups; NULL or ''
--                     elements = no group (brooq.enqueue's group_key, per element).
--                     The jobs of one group in the batch are ordered as in the
--                     array. The groups' rows of brooq.job_group are locked in key
--                     order, so two batches cannot deadlock over them (single
--                     enqueues into several groups in one transaction may: 40P01).
--   after_child, after_parent   a workflow's edges, an edge list (SQL arrays cannot be
--                     ragged): element after_child[i] (1-based) waits for
--                     after_parent[i], a job id (> 0, an existing job of any topic),
--                     or -k for element k of this same call, which must come earlier
--                     (k < after_child[i]): so no cycle can be built. Arrays of one
--                     length, at most 100,000 edges, at most 10,000 parents per
--                     element; a repeated edge counts once. NULL = no edges. As
--                     brooq.enqueue's after, per element; with group_keys, a waiting
--                     element holds its group's place; not with idempotency_keys (an
--                     element found by its key is not the job the edges describe).
--   after_policy      as in brooq.enqueue, for every element with parents: under
--                     cancel, an element with a dead or canceled parent is canceled
--                     at its birth, and so are the elements of this call that wait
--                     for it, transitively.
--
-- Returns: (id, created) per payload, in input order. When a key's old job is
-- purged while the call runs, the job is inserted after all, as brooq.enqueue
-- does (two such calls with the same keys at once may then deadlock: 40P01, retry).
-- A key held by another transaction's uncommitted enqueue is waited for at most
-- brooq.key_wait (default 5s), as in brooq.enqueue.
-- Errors:
--   22004 null_value_not_allowed   topic, payloads, priority or a payload is NULL; a NULL
--                                  element in after_child or after_parent
--   23503 foreign_key_violation    an after_parent job id does not exist (named)
--   42704 undefined_object         the topic was not declared
--   54000 program_limit_exceeded   more than 10,000 payloads; a payload is too large
--                                  (its index is named)
--   22023 invalid_parameter_value  an array of more than one dimension; keys or group
--                                  keys array of another length; a key or group key
--                                  too long; bad
--                                  available_at or delay; brooq.key_wait not a duration;
--                                  a trace_context that is not a W3C trace context;
--                                  after_child and after_parent of different lengths,
--                                  an edge that names no element or a later one, an
--                                  unknown after_policy, edges with idempotency keys
--   54000 program_limit_exceeded   (also) more than 100,000 edges, more than 10,000
--                                  parents for one element
--   55P03 lock_not_available       a key or group held by an uncommitted transaction
--                                  longer than brooq.key_wait
--                                  or a key whose job a router staged and has not
--                                  published yet (brooq.enqueue_staged)
-- Touches: inserts up to cardinality(payloads) rows into brooq.job; with groups,
-- inserts or updates their rows of brooq.job_group; with edges, locks the parents
-- named by id FOR KEY SHARE (as brooq.enqueue), inserts one row per edge into
-- brooq.job_edge, and one into brooq.job_edge_check per element with a parent of
-- another transaction that had not finished; on error none.

-- 0.1.0's signature, without group_keys, and the one without the edges (harmless
-- where they do not exist).
drop function if exists brooq.enqueue_many(text, jsonb[], text[], timestamptz, integer, interval);
drop function if exists brooq.enqueue_many(text, jsonb[], text[], timestamptz, integer, interval, text[], jsonb);

create or replace function brooq.enqueue_many(
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
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_now timestamptz := brooq._now();
    v_at timestamptz;
    v_n integer := coalesce(cardinality(enqueue_many.payloads), 0);
    v_max_attempts integer;
    v_max_bytes integer;
    v_notify boolean;
    v_bad record;
    v_ids bigint[];
    v_created bigint[];
    v_out bigint[];
    v_new boolean[];
    v_lock_timeout text;
    v_groups text[];   -- per payload: its group ('' made NULL), or NULL for no groups at all
    v_seqs bigint[];   -- per payload: its group_seq
    v_trace jsonb := brooq._trace_context(enqueue_many.trace_context, 'brooq.enqueue_many');
    -- workflows: the edges' parents named by id, locked, and their states; per element
    v_policy text;
    v_ext bigint[];
    v_ext_states text[];
    v_canceled integer[];   -- elements canceled at birth (under cancel)
    v_causes bigint[];      -- per element of v_canceled: the parent that canceled it
    v_canceled_by bigint[]; -- per element: that parent (NULL: not canceled at birth)
    v_states text[];
    v_lefts integer[];
    v_errors text[];
    v_policies text[];
begin
    if enqueue_many.topic is null or enqueue_many.payloads is null or enqueue_many.priority is null then
        raise exception 'brooq.enqueue_many: topic, payloads and priority must not be NULL'
            using errcode = 'null_value_not_allowed',
                  hint = 'Pass an empty array for no jobs.';
    end if;
    select t.max_attempts, t.max_payload_bytes, t.notify
      into v_max_attempts, v_max_bytes, v_notify
      from brooq.topic t where t.name = enqueue_many.topic;
    if not found then
        raise exception 'topic "%" does not exist', left(enqueue_many.topic, 200)
            using errcode = 'undefined_object',
                  hint = 'Declare it first with brooq.declare_topic(name => ...).';
    end if;
    if array_ndims(enqueue_many.payloads) > 1 or array_ndims(enqueue_many.idempotency_keys) > 1
        or array_ndims(enqueue_many.group_keys) > 1 then
        raise exception 'brooq.enqueue_many: payloads, idempotency_keys and group_keys must be one-dimensional arrays'
            using errcode = 'invalid_parameter_value',
                  hint = 'Pass array[''{}''::jsonb, ...], one element per job.';
    end if;
    if v_n > 10000 then
        raise exception 'brooq.enqueue_many: % payloads in one call, more than 10000', v_n
            using errcode = 'program_limit_exceeded',
                  hint = 'Enqueue at most 10000 jobs per call; several calls may share one transaction.';
    end if;
    if enqueue_many.idempotency_keys is not null
        and coalesce(cardinality(enqueue_many.idempotency_keys), 0) <> v_n then
        raise exception 'idempotency_keys has % elements, payloads has %',
                coalesce(cardinality(enqueue_many.idempotency_keys), 0), v_n
            using errcode = 'invalid_parameter_value',
                  hint = 'Give one key per payload (NULL for none), or NULL for no keys at all.';
    end if;
    if enqueue_many.group_keys is not null
        and coalesce(cardinality(enqueue_many.group_keys), 0) <> v_n then
        raise exception 'group_keys has % elements, payloads has %',
                coalesce(cardinality(enqueue_many.group_keys), 0), v_n
            using errcode = 'invalid_parameter_value',
                  hint = 'Give one group key per payload (NULL for none), or NULL for no groups at all.';
    end if;
    v_at := brooq._available_at(v_now, enqueue_many.available_at, enqueue_many.delay);
    if enqueue_many.after_child is not null or enqueue_many.after_parent is not null then
        -- Workflows: the edges are checked here, before anything is written.
        if array_ndims(enqueue_many.after_child) > 1 or array_ndims(enqueue_many.after_parent) > 1
            or coalesce(cardinality(enqueue_many.after_child), 0) <> coalesce(cardinality(enqueue_many.after_parent), 0) then
            raise exception 'after_child has % elements, after_parent has %',
                    coalesce(cardinality(enqueue_many.after_child), 0), coalesce(cardinality(enqueue_many.after_parent), 0)
                using errcode = 'invalid_parameter_value',
                      hint = 'Give the edges as two one-dimensional arrays of one length: element after_child[i] waits for after_parent[i].';
        end if;
        if cardinality(enqueue_many.after_child) > 100000 then
            raise exception 'brooq.enqueue_many: % edges in one call, more than 100000', cardinality(enqueue_many.after_child)
                using errcode = 'program_limit_exceeded',
                      hint = 'Give at most 100000 edges per call; several calls may share one transaction.';
        end if;
        v_policy := coalesce(enqueue_many.after_policy, 'cancel');
        if v_policy not in ('cancel', 'run') then
            raise exception 'unknown after_policy "%"', left(v_policy, 40)
                using errcode = 'invalid_parameter_value',
                      hint = 'after_policy is cancel (a dead or canceled parent cancels its children) or run (a child runs once every parent has finished).';
        end if;
        if cardinality(enqueue_many.after_child) > 0
            and coalesce(cardinality(array_remove(array_remove(enqueue_many.idempotency_keys, null), '')), 0) > 0 then
            raise exception 'brooq.enqueue_many: edges (after_child) with idempotency_keys'
                using errcode = 'invalid_parameter_value',
                      hint = 'Enqueue a workflow without keys; make it idempotent by a key on a job that creates it.';
        end if;
        select e.ord, e.child, e.parent into v_bad
          from unnest(enqueue_many.after_child, enqueue_many.after_parent) with ordinality as e(child, parent, ord)
         where e.child is null or e.parent is null
            or e.child not between 1 and v_n or e.parent = 0 or e.parent < 0 and -e.parent >= e.child
         order by (e.child is null or e.parent is null) desc, e.ord
         limit 1;
        if found and (v_bad.child is null or v_bad.parent is null) then
            raise exception 'edge % has a NULL after_child or after_parent', v_bad.ord
                using errcode = 'null_value_not_allowed',
                      hint = 'Give each edge its element (1-based) and its parent (a job id, or -k for element k).';
        elsif found then
            raise exception 'edge %: element % cannot wait for %', v_bad.ord, v_bad.child, v_bad.parent
                using errcode = 'invalid_parameter_value',
                      hint = format('after_child is an element of this call (1..%s); after_parent a job id (> 0), or -k for an earlier element k.', v_n);
        end if;
        select e.child, count(distinct e.parent) as n into v_bad
          from unnest(enqueue_many.after_child, enqueue_many.after_parent) as e(child, parent)
         group by e.child
        having count(distinct e.parent) > 10000
         limit 1;
        if found then
            raise exception 'element % has % parents, more than 10000', v_bad.child, v_bad.n
                using errcode = 'program_limit_exceeded',
                      hint = 'Name at most 10000 parents per job; for a larger fan-in, wait for intermediate jobs.';
        end if;
    end if;
    if v_n = 0 then
        return;
    end if;

    select p.ord, p.payload is null as missing, octet_length(p.payload::text) as size
      into v_bad
      from unnest(enqueue_many.payloads) with ordinality as p(payload, ord)
     where p.payload is null or octet_length(p.payload::text) > v_max_bytes
     order by p.ord
     limit 1;
    if found and v_bad.missing then
        raise exception 'payload % of % is NULL', v_bad.ord, v_n
            using errcode = 'null_value_not_allowed',
                  hint = 'Pass ''{}'' for an empty payload.';
    elsif found then
        raise exception 'payload % of % is % bytes, larger than the % bytes allowed for topic "%"',
                v_bad.ord, v_n, v_bad.size, v_max_bytes, enqueue_many.topic
            using errcode = 'program_limit_exceeded',
                  hint = 'Store large data elsewhere and enqueue a reference, or raise max_payload_bytes with brooq.declare_topic.';
    end if;
    select k.ord, k.key into v_bad
      from unnest(enqueue_many.idempotency_keys) with ordinality as k(key, ord)
     where length(k.key) > 255
     limit 1;
    if found then
        raise exception 'idempotency key % ("%...") is % characters long', v_bad.ord, left(v_bad.key, 40), length(v_bad.key)
            using errcode = 'invalid_parameter_value',
                  hint = 'Use keys of at most 255 characters, e.g. a hash of the longer one.';
    end if;
    select k.ord, k.key into v_bad
      from unnest(enqueue_many.group_keys) with ordinality as k(key, ord)
     where length(k.key) > 255
     limit 1;
    if found then
        raise exception 'group key % ("%...") is % characters long', v_bad.ord, left(v_bad.key, 40), length(v_bad.key)
            using errcode = 'invalid_parameter_value',
                  hint = 'Use group keys of at most 255 characters, e.g. a hash of the longer one.';
    end if;

    -- Ids are drawn first, so that each input element knows its own row.
    v_ids := array(select nextval('brooq.job_id_seq'::regclass) from generate_series(1, v_n));

    if coalesce(cardinality(array_remove(array_remove(enqueue_many.group_keys, null), '')), 0) > 0 then
        -- Ordered groups: each group's next numbers, under its row of brooq.job_group
        -- (locked in key order, held to commit; see brooq.enqueue), in array order.
        v_lock_timeout := current_setting('lock_timeout');
        perform set_config('lock_timeout', coalesce(nullif(current_setting('brooq.key_wait', true), ''), '5s'), true);
        v_groups := array(select nullif(k, '') from unnest(enqueue_many.group_keys) as k);
        with wanted as (
            select k as key, count(*) as n
              from unnest(v_groups) as k
             where k is not null
             group by k
        ), given as (
            insert into brooq.job_group as g (topic, group_key, last_seq)
            select enqueue_many.topic, w.key, w.n from wanted w order by w.key
            on conflict on constraint job_group_pkey do update set last_seq = g.last_seq + excluded.last_seq
            returning g.group_key, g.last_seq
        )
        select array_agg(s.seq order by s.ord) into v_seqs
          from (select u.ord,
                       gv.last_seq - w.n + row_number() over (partition by u.key order by u.ord) as seq
                  from unnest(v_groups) with ordinality as u(key, ord)
                  left join given gv on gv.group_key = u.key
                  left join wanted w on w.key = u.key) as s;
        perform set_config('lock_timeout', v_lock_timeout, true);
    end if;

    if cardinality(enqueue_many.after_child) > 0 then
        -- The parents named by id: locked FOR KEY SHARE as brooq.enqueue does.
        v_ext := array(select distinct e.parent from unnest(enqueue_many.after_parent) as e(parent)
                        where e.parent > 0 order by e.parent);
        select coalesce(array_agg(p.id order by p.id), '{}'), coalesce(array_agg(p.state::text order by p.id), '{}')
          into v_ext, v_ext_states
          from (select q.id, q.state from brooq.job q
                 where q.id = any(v_ext)
                 order by q.id
                   for key share) as p;
        select e.parent into v_bad
          from unnest(enqueue_many.after_parent) as e(parent)
         where e.parent > 0 and not e.parent = any(v_ext)
         order by e.parent
         limit 1;
        if found then
            raise exception 'parent job % does not exist', v_bad.parent
                using errcode = 'foreign_key_violation',
                      hint = 'Name jobs that exist (a purged job no longer does), or -k for element k of this call.';
        end if;
        -- Canceled at birth (cancel only): an element with a dead or canceled parent,
        -- and the elements that wait for one, transitively (ids name the cause).
        if v_policy = 'cancel' then
            with recursive edge as (
                select distinct e.child, e.parent
                  from unnest(enqueue_many.after_child, enqueue_many.after_parent) as e(child, parent)
            ), gone(element, cause) as (
                select e.child, e.parent
                  from edge e
                  join unnest(v_ext, v_ext_states) as x(id, state) on x.id = e.parent
                 where x.state in ('dead', 'canceled')
                union
                select e.child, v_ids[g.element]
                  from gone g
                  join edge e on e.parent = -g.element
            )
            select array_agg(g.element order by g.element), array_agg(g.cause order by g.element)
              into v_canceled, v_causes
              from (select g.element, min(g.cause) as cause from gone g group by g.element) as g;
        end if;
        select array_agg(case when c.element is not null then 'canceled'
                              when coalesce(l.n, 0) > 0 then 'waiting' else 'pending' end order by i.i),
               array_agg(coalesce(l.n, 0) order by i.i),
               array_agg(case when c.element is null then null
                              else format('parent job %s ended %s (after_policy cancel)', c.cause,
                                          coalesce(v_ext_states[array_position(v_ext, c.cause)], 'canceled')) end
                         order by i.i),
               array_agg(case when l.child is not null then v_policy end order by i.i),
               array_agg(c.cause order by i.i)
          into v_states, v_lefts, v_errors, v_policies, v_canceled_by
          from generate_series(1, v_n) as i(i)
          left join (select e.child,
                            count(distinct e.parent) filter (
                                where e.parent < 0 and not coalesce(-e.parent = any(v_canceled), false)
                                   or e.parent > 0 and v_ext_states[array_position(v_ext, e.parent)]
                                                       not in ('done', 'dead', 'canceled')) as n
                       from unnest(enqueue_many.after_child, enqueue_many.after_parent) as e(child, parent)
                      group by e.child) as l on l.child = i.i
          left join unnest(v_canceled, v_causes) as c(element, cause) on c.element = i.i;

        insert into brooq.job (id, topic, payload, priority, max_attempts, available_at, created_at,
                               updated_at, trace_context, state, parents_left, after_policy, last_error,
                               group_key, group_seq, canceled_by)
        select u.id, enqueue_many.topic, u.payload, enqueue_many.priority, v_max_attempts, v_at, v_now,
               v_now, v_trace, u.state, u.parents_left, u.after_policy, u.last_error,
               u.group_key, u.group_seq, u.canceled_by
          from unnest(v_ids, enqueue_many.payloads, v_states, v_lefts, v_policies, v_errors,
                      v_groups, v_seqs, v_canceled_by)
               as u(id, payload, state, parents_left, after_policy, last_error,
                    group_key, group_seq, canceled_by);
        insert into brooq.job_edge (parent, child, settled)
        select distinct case when e.parent < 0 then v_ids[-e.parent] else e.parent end, v_ids[e.child],
               case when e.parent < 0 then coalesce(-e.parent = any(v_canceled), false)
                    else v_ext_states[array_position(v_ext, e.parent)] in ('done', 'dead', 'canceled') end
          from unnest(enqueue_many.after_child, enqueue_many.after_parent) as e(child, parent);
        -- a parent of another transaction that had not finished: see brooq.enqueue
        insert into brooq.job_edge_check (child)
        select distinct v_ids[e.child]
          from unnest(enqueue_many.after_child, enqueue_many.after_parent) as e(child, parent)
         where e.parent > 0
           and v_ext_states[array_position(v_ext, e.parent)] not in ('done', 'dead', 'canceled');
        if v_notify and v_at <= v_now and 'pending' = any(v_states) then
            perform pg_notify('brooq', enqueue_many.topic);
        end if;
        return query
        select r.id, true from unnest(v_ids) with ordinality as r(id, ord) order by r.ord;
        return;
    end if;

    if coalesce(cardinality(array_remove(array_remove(enqueue_many.idempotency_keys, null), '')), 0) = 0 then
        -- No key in the batch (the bulk case): nothing can conflict, so a plain
        -- insert, without ON CONFLICT's speculative insertion of every row (about
        -- 15% of a batch's time) and without reading the ids back.
        insert into brooq.job (id, topic, payload, priority, max_attempts, idempotency_key,
                               available_at, created_at, updated_at, group_key, group_seq, trace_context)
        select u.id, enqueue_many.topic, u.payload, enqueue_many.priority, v_max_attempts,
               null, v_at, v_now, v_now, u.group_key, u.group_seq, v_trace
          from unnest(v_ids, enqueue_many.payloads, v_groups, v_seqs) as u(id, payload, group_key, group_seq);
        v_created := v_ids;
        v_out := v_ids;
        v_new := array_fill(true, array[v_n]);
    else
        -- A key of another transaction's uncommitted enqueue: wait at most brooq.key_wait.
        v_lock_timeout := current_setting('lock_timeout');
        perform set_config('lock_timeout', coalesce(nullif(current_setting('brooq.key_wait', true), ''), '5s'), true);
        with inserted as (
            insert into brooq.job (id, topic, payload, priority, max_attempts, idempotency_key,
                                   available_at, created_at, updated_at, group_key, group_seq, trace_context)
            select u.id, enqueue_many.topic, u.payload, enqueue_many.priority, v_max_attempts,
                   nullif(u.key, ''), v_at, v_now, v_now, u.group_key, u.group_seq, v_trace
              from unnest(v_ids, enqueue_many.payloads, enqueue_many.idempotency_keys, v_groups, v_seqs)
                   as u(id, payload, key, group_key, group_seq)
             -- In key order, so that concurrent batches with overlapping keys wait for
             -- each other in one order and cannot deadlock; a key repeated in the
             -- batch is inserted at its first occurrence (ids are drawn in input order).
             order by u.key, u.id
            on conflict (topic, idempotency_key) where idempotency_key is not null do nothing
            returning id
        )
        select coalesce(array_agg(inserted.id), '{}') into v_created from inserted;

        loop
            -- A new statement, so a new snapshot: it sees the rows of keys that already
            -- existed, including those a concurrent transaction committed meanwhile.
            select array_agg(coalesce(c.id, j.id) order by u.ord), array_agg(c.id is not null order by u.ord)
              into v_out, v_new
              from unnest(v_ids, enqueue_many.idempotency_keys) with ordinality as u(id, key, ord)
              left join unnest(v_created) as c(id) on c.id = u.id
              left join brooq.job j
                on c.id is null and j.topic = enqueue_many.topic and j.idempotency_key = nullif(u.key, '');
            exit when array_position(v_out, null) is null;
            -- A key's row was purged between the insert and that read: insert those
            -- jobs now and read again, as brooq.enqueue does.
            with inserted as (
                insert into brooq.job (id, topic, payload, priority, max_attempts, idempotency_key,
                                       available_at, created_at, updated_at, group_key, group_seq, trace_context)
                select u.id, enqueue_many.topic, u.payload, enqueue_many.priority, v_max_attempts,
                       nullif(u.key, ''), v_at, v_now, v_now, u.group_key, u.group_seq, v_trace
                  from unnest(v_ids, enqueue_many.payloads, enqueue_many.idempotency_keys, v_out, v_groups, v_seqs)
                       as u(id, payload, key, got, group_key, group_seq)
                 where u.got is null
                 order by u.key, u.id
                on conflict (topic, idempotency_key) where idempotency_key is not null do nothing
                returning id
            )
            select v_created || coalesce(array_agg(inserted.id), '{}') into v_created from inserted;
        end loop;
        perform set_config('lock_timeout', v_lock_timeout, true);
        -- A key whose job a router staged here and has not published yet
        -- (brooq.enqueue_staged): that call may still be discarded.
        if false = any(v_new) and exists (
                select from brooq.job j, brooq.staged_call s
                 where j.id = any(array(select u.id from unnest(v_out, v_new) as u(id, created) where not u.created))
                   and j.available_at = '9999-12-30 00:00:00+00'
                   and s.state in ('staged', 'fenced') and s.job_ids @> array[j.id]) then
            raise exception 'an idempotency key of this batch belongs to a job of a bulk enqueue not published yet'
                using errcode = 'lock_not_available',
                      hint = 'Retry in a moment: that call is published or discarded within seconds (by brooq_proxy.resolve() after a failure).';
        end if;

    end if;

    if v_notify and cardinality(v_created) > 0 and v_at <= v_now then
        perform pg_notify('brooq', enqueue_many.topic);
    end if;

    return query
    select r.id, r.created
      from unnest(v_out, v_new) with ordinality as r(id, created, ord)
     order by r.ord;
end
$$;

comment on function brooq.enqueue_many(text, jsonb[], text[], timestamptz, integer, interval, text[], jsonb, integer[], bigint[], text) is
'Enqueue many jobs of one topic in one call, in ordered groups when group_keys is given; returns (id, created) per payload in input order; after_child/after_parent: element after_child[i] waits for the job after_parent[i] (> 0) or for element -after_parent[i] of this call. Errors: 22004, 23503 (an unknown parent), 42704, 54000 (also more than 10000 payloads or 100000 edges), 22023 (as enqueue, naming the element; arrays of more than one dimension; a bad trace_context; a bad edge), 55P03 (a key held too long, as enqueue).';

revoke all on function brooq.enqueue_many(text, jsonb[], text[], timestamptz, integer, interval, text[], jsonb, integer[], bigint[], text) from public;
grant execute on function brooq.enqueue_many(text, jsonb[], text[], timestamptz, integer, interval, text[], jsonb, integer[], bigint[], text) to brooq_producer;
