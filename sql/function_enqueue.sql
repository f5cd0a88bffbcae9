-- brooq.enqueue(topic, payload, idempotency_key, available_at, priority, delay,
--               group_key, trace_context, after, after_policy)
--   -> setof brooq.enqueued (exactly one row)
--
-- Inserts one job in the caller's transaction: your own writes and the job
-- commit or roll back together.
--
-- Parameters:
--   topic            a declared topic
--   payload          opaque JSON; the queue never looks inside; at most the
--                    topic's max_payload_bytes (bytes of its JSON text)
--   idempotency_key  at most one job per (topic, key) while the row lives,
--                    terminal states included; NULL or '' = no key
--   available_at     not claimable before this instant (default: now)
--   priority         higher is claimed first (default 0)
--   delay            not claimable before now + delay (exclusive with available_at)
--   group_key        an ordered group: the jobs of one (topic, group_key)
--                    run one at a time, in the order their enqueues committed
--                    (group_seq, drawn from brooq.job_group under its row lock; see
--                    brooq.claim). NULL or '' = no group. At most 255 characters.
--                    Two transactions enqueueing into one group wait for each
--                    other (at most brooq.key_wait, then 55P03, as for a key).
--                    A transaction that enqueues into several groups should do it
--                    in key order (or use enqueue_many, which does): two that take
--                    the same groups in opposite orders deadlock (40P01, retry).
--   trace_context    the W3C trace context to carry in the job, beside the payload:
--                    {"traceparent": "00-<32 hex>-<16 hex>-<2 hex>"} and optionally
--                    "tracestate" (at most 512 characters); claim hands it to the
--                    worker. NULL or '{}' = none (see brooq._trace_context)
--   after            the ids of the jobs this one waits for, its parents (a workflow,
--                    docs/architecture.md "Workflows"): at most 10,000, existing
--                    jobs of any topic; repeats count once. While one has not
--                    finished, the job is waiting (never claimed); the settle that
--                    finishes its last parent makes it pending, in the same
--                    transaction. NULL or '{}' = no parents. With a group_key, the
--                    job holds its group's place while it waits: the group's later
--                    jobs run after it (see brooq.claim, ordered groups).
--   after_policy     what a parent that ends dead or canceled does: 'cancel' (the
--                    default; NULL too) cancels this job at once, last_error naming
--                    the parent, and its waiting descendants under cancel too;
--                    'run' counts it as finished (the job runs once all its parents
--                    have finished, whatever their outcome). A parent already
--                    finished at this enqueue counts the same way.
--
-- Returns: (id, created). A repeated key returns the existing job's id with
-- created = false and writes nothing, also when the first enqueue is concurrent.
-- While another transaction holds an uncommitted enqueue of the same (topic, key),
-- this one waits for it to end, at most brooq.key_wait (a setting, default 5s;
-- '0' waits without bound), then fails with 55P03.
-- Wakes workers with NOTIFY brooq, payload = topic (PostgreSQL folds repeats within
-- one transaction), unless the topic was declared with notify => false or the job
-- is not ready yet.
-- Errors:
--   22004 null_value_not_allowed    topic, payload or priority is NULL; a NULL parent id
--   23503 foreign_key_violation     a parent in after does not exist (the first is named)
--   42704 undefined_object          the topic was not declared
--   54000 program_limit_exceeded    the payload is larger than max_payload_bytes
--   22023 invalid_parameter_value   key or group_key longer than 255 characters; available_at
--                                   not finite or from 9999-12-31 on; delay negative
--                                   or over 100 years; both available_at and delay
--                                   given; brooq.key_wait not a duration; a
--                                   trace_context that is not a W3C trace context;
--                                   an unknown after_policy; after of more than one
--                                   dimension
--   54000 program_limit_exceeded    more than 10,000 parents
--   55P03 lock_not_available        another transaction's enqueue of the same key,
--                                   or into the same group, stayed uncommitted
--                                   longer than brooq.key_wait
--                                   a key whose job a router staged and has not
--                                   published yet (brooq.enqueue_staged)
-- Touches: inserts one row into brooq.job (none on a repeated key or an error); with
-- a group, inserts or updates its row of brooq.job_group. With parents: locks them
-- FOR KEY SHARE to this transaction's end (nothing a worker does to a parent waits
-- for it), inserts one row per parent into brooq.job_edge, and one into
-- brooq.job_edge_check when a parent had not finished.

-- 0.1.0's signature, without group_key and trace_context, and the one without after
-- and after_policy (harmless where they do not exist).
drop function if exists brooq.enqueue(text, jsonb, text, timestamptz, integer, interval);
drop function if exists brooq.enqueue(text, jsonb, text, timestamptz, integer, interval, text, jsonb);

create or replace function brooq.enqueue(
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
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_now timestamptz := brooq._now();
    v_key text := nullif(enqueue.idempotency_key, '');
    v_at timestamptz;
    v_max_attempts integer;
    v_max_bytes integer;
    v_notify boolean;
    v_id bigint;
    v_existing_at timestamptz;
    v_lock_timeout text;
    v_group text := nullif(enqueue.group_key, '');
    v_seq bigint;
    v_trace jsonb;
    -- workflows: the new job's state, parents not finished yet, policy, cause
    v_state text := 'pending';
    v_left integer := 0;
    v_policy text;
    v_error text;
    v_parents bigint[];
    v_found integer;
    v_bad bigint;
    v_ended bigint[];
begin
    if enqueue.topic is null or enqueue.payload is null or enqueue.priority is null then
        raise exception 'brooq.enqueue: topic, payload and priority must not be NULL'
            using errcode = 'null_value_not_allowed',
                  hint = 'Pass ''{}'' for an empty payload.';
    end if;
    select t.max_attempts, t.max_payload_bytes, t.notify
      into v_max_attempts, v_max_bytes, v_notify
      from brooq.topic t where t.name = enqueue.topic;
    if not found then
        raise exception 'topic "%" does not exist', left(enqueue.topic, 200)
            using errcode = 'undefined_object',
                  hint = 'Declare it first with brooq.declare_topic(name => ...).';
    end if;
    if octet_length(enqueue.payload::text) > v_max_bytes then
        raise exception 'payload of % bytes is larger than the % bytes allowed for topic "%"',
                octet_length(enqueue.payload::text), v_max_bytes, enqueue.topic
            using errcode = 'program_limit_exceeded',
                  hint = 'Store large data elsewhere and enqueue a reference, or raise max_payload_bytes with brooq.declare_topic.';
    end if;
    if length(v_key) > 255 then
        raise exception 'idempotency_key "%..." is % characters long', left(v_key, 40), length(v_key)
            using errcode = 'invalid_parameter_value',
                  hint = 'Use a key of at most 255 characters, e.g. a hash of the longer one.';
    end if;
    if length(v_group) > 255 then
        raise exception 'group_key "%..." is % characters long', left(v_group, 40), length(v_group)
            using errcode = 'invalid_parameter_value',
                  hint = 'Use a group key of at most 255 characters, e.g. a hash of the longer one.';
    end if;
    -- The helpers only for what was given: each call costs a producer ~5 µs.
    if enqueue.available_at is null and enqueue.delay is null then
        v_at := v_now;
    else
        v_at := brooq._available_at(v_now, enqueue.available_at, enqueue.delay);
    end if;
    if enqueue.trace_context is not null then
        v_trace := brooq._trace_context(enqueue.trace_context, 'brooq.enqueue');
    end if;
    if enqueue.after is not null then
        -- Workflows (only a job with parents pays for this block).
        if array_ndims(enqueue.after) > 1 then
            raise exception 'brooq.enqueue: after must be a one-dimensional array'
                using errcode = 'invalid_parameter_value',
                      hint = 'Pass array[parent_id, ...].';
        end if;
        if array_position(enqueue.after, null) is not null then
            raise exception 'brooq.enqueue: after holds a NULL parent id'
                using errcode = 'null_value_not_allowed',
                      hint = 'Pass the ids that enqueue returned for the parents.';
        end if;
        v_policy := coalesce(enqueue.after_policy, 'cancel');
        if v_policy not in ('cancel', 'run') then
            raise exception 'unknown after_policy "%"', left(v_policy, 40)
                using errcode = 'invalid_parameter_value',
                      hint = 'after_policy is cancel (a dead or canceled parent cancels this job) or run (it runs once every parent has finished).';
        end if;
        v_parents := array(select distinct a from unnest(enqueue.after) as a order by a);
        if cardinality(v_parents) > 10000 then
            raise exception 'brooq.enqueue: % parents, more than 10000', cardinality(v_parents)
                using errcode = 'program_limit_exceeded',
                      hint = 'Name at most 10000 parents; for a larger fan-in, wait for intermediate jobs.';
        end if;
        if cardinality(v_parents) = 0 then
            v_parents := null;
            v_policy := null;
        else
            -- The parents are locked FOR KEY SHARE to this transaction's end, as a
            -- foreign key would: none can be deleted meanwhile, and no settle,
            -- heartbeat or claim of a parent waits for this transaction (their
            -- updates never change a key). A parent that a concurrent settle ends
            -- before this commits cannot see this job's edge: the job is noted in
            -- brooq.job_edge_check, and the next reap counts that end
            -- (brooq._release_missed).
            select count(*), count(*) filter (where p.state not in ('done', 'dead', 'canceled')),
                   min(p.id) filter (where p.state in ('dead', 'canceled')),
                   array_agg(p.id order by p.id) filter (where p.state in ('done', 'dead', 'canceled'))
              into v_found, v_left, v_bad, v_ended
              from (select q.id, q.state from brooq.job q
                     where q.id = any(v_parents)
                     order by q.id
                       for key share) as p;
            if v_found < cardinality(v_parents) then
                raise exception 'parent job % does not exist',
                        (select a from unnest(v_parents) as a
                          where not exists (select from brooq.job j where j.id = a) order by a limit 1)
                    using errcode = 'foreign_key_violation',
                          hint = 'Name jobs that exist (a purged job no longer does); within one call, enqueue_many can refer to its earlier elements.';
            end if;
            if v_bad is not null and v_policy = 'cancel' then
                v_state := 'canceled';
                v_error := format('parent job %s ended %s (after_policy cancel)', v_bad,
                                  (select j.state from brooq.job j where j.id = v_bad));
            elsif v_left > 0 then
                v_state := 'waiting';
            end if;
        end if;
    end if;
    if v_key is not null or v_group is not null then
        -- ON CONFLICT waits for another transaction's uncommitted row of this key:
        -- bound that wait (no EXCEPTION block to reword the error: a subtransaction
        -- per enqueue would cost every producer, so the 55P03 is PostgreSQL's own).
        v_lock_timeout := current_setting('lock_timeout');
        perform set_config('lock_timeout', coalesce(nullif(current_setting('brooq.key_wait', true), ''), '5s'), true);
    end if;
    if v_group is not null then
        -- The group's next number, under its row lock, held to this transaction's
        -- commit (see brooq.job_group): group_seq grows in commit order.
        insert into brooq.job_group as g (topic, group_key, last_seq)
        values (enqueue.topic, v_group, 1)
        on conflict on constraint job_group_pkey do update set last_seq = g.last_seq + 1
        returning g.last_seq into v_seq;
    end if;

    -- Without a key, a plain INSERT: ON CONFLICT would insert speculatively (one more
    -- WAL record and a confirmation per job) for an index the row never enters.
    if v_key is null then
        insert into brooq.job (topic, payload, priority, max_attempts, available_at,
                               created_at, updated_at, group_key, group_seq, trace_context,
                               state, parents_left, after_policy, last_error, canceled_by)
        values (enqueue.topic, enqueue.payload, enqueue.priority, v_max_attempts, v_at,
                v_now, v_now, v_group, v_seq, v_trace, v_state, v_left, v_policy, v_error,
                case when v_state = 'canceled' then v_bad end)
        returning id into v_id;
    else
        loop
            insert into brooq.job (topic, payload, priority, max_attempts, idempotency_key,
                                   available_at, created_at, updated_at, group_key, group_seq,
                                   trace_context, state, parents_left, after_policy, last_error, canceled_by)
            values (enqueue.topic, enqueue.payload, enqueue.priority, v_max_attempts, v_key,
                    v_at, v_now, v_now, v_group, v_seq, v_trace, v_state, v_left, v_policy, v_error,
                    case when v_state = 'canceled' then v_bad end)
            on conflict (topic, idempotency_key) where idempotency_key is not null do nothing
            returning id into v_id;
            exit when v_id is not null;
            -- The key exists: ON CONFLICT waited for a concurrent inserter, and this
            -- statement's fresh snapshot sees its committed row. Loop only if that row
            -- was purged in between.
            select j.id, j.available_at into v_id, v_existing_at from brooq.job j
            where j.topic = enqueue.topic and j.idempotency_key = v_key;
            if found then
                -- The key's job is a router's bulk enqueue, staged here and not yet
                -- published (brooq.enqueue_staged): that call may still be discarded.
                if v_existing_at = '9999-12-30 00:00:00+00' and exists (
                        select from brooq.staged_call s
                         where s.state in ('staged', 'fenced') and s.job_ids @> array[v_id]) then
                    raise exception 'idempotency_key "%" belongs to a job of a bulk enqueue not published yet',
                            left(v_key, 40)
                        using errcode = 'lock_not_available',
                              hint = 'Retry in a moment: that call is published or discarded within seconds (by brooq_proxy.resolve() after a failure).';
                end if;
                perform set_config('lock_timeout', v_lock_timeout, true);
                return query select v_id, false;
                return;
            end if;
        end loop;
    end if;
    if v_key is not null or v_group is not null then
        perform set_config('lock_timeout', v_lock_timeout, true);
    end if;
    if v_parents is not null then
        -- settled as the locking read above saw each parent (a parent may end
        -- meanwhile: that end is counted by its settle or by _release_missed)
        insert into brooq.job_edge (parent, child, settled)
        select a, v_id, coalesce(a = any(v_ended), false) from unnest(v_parents) as a;
        if v_left > 0 then
            insert into brooq.job_edge_check (child) values (v_id);
        end if;
    end if;
    if v_notify and v_at <= v_now and v_state = 'pending' then
        perform pg_notify('brooq', enqueue.topic);
    end if;
    return query select v_id, true;
end
$$;

comment on function brooq.enqueue(text, jsonb, text, timestamptz, integer, interval, text, jsonb, bigint[], text) is
'Enqueue one job in the caller''s transaction, in an ordered group when group_key is given, waiting for its parents when after is given; returns (id, created). Errors: 22004 NULL argument or parent id, 23503 unknown parent, 42704 unknown topic, 54000 payload too large or more than 10000 parents, 22023 bad key, group_key, time, delay, trace_context, after or after_policy, 55P03 the key or group held by an uncommitted transaction longer than brooq.key_wait.';

revoke all on function brooq.enqueue(text, jsonb, text, timestamptz, integer, interval, text, jsonb, bigint[], text) from public;
grant execute on function brooq.enqueue(text, jsonb, text, timestamptz, integer, interval, text, jsonb, bigint[], text) to brooq_producer;
