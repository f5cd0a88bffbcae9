-- Revert brooq:function_enqueue from pg
-- Written by hand (the rework added group_key, trace_context, after and after_policy to the signature): drops the new signature, then
-- restores function_enqueue@v0.1.0, the body of its deploy script.

begin;

drop function brooq.enqueue(text, jsonb, text, timestamptz, integer, interval, text, jsonb, bigint[], text);

-- brooq.enqueue(topic, payload, idempotency_key, available_at, priority, delay)
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
--
-- Returns: (id, created). A repeated key returns the existing job's id with
-- created = false and writes nothing, also when the first enqueue is concurrent.
-- Wakes workers with NOTIFY brooq, payload = topic (PostgreSQL folds repeats within
-- one transaction), unless the topic was declared with notify => false or the job
-- is not ready yet.
-- Errors:
--   22004 null_value_not_allowed    topic, payload or priority is NULL
--   42704 undefined_object          the topic was not declared
--   54000 program_limit_exceeded    the payload is larger than max_payload_bytes
--   22023 invalid_parameter_value   key longer than 255 characters; available_at
--                                   not finite; delay negative; both available_at
--                                   and delay given
-- Touches: inserts one row into brooq.job (none on a repeated key or an error).
create or replace function brooq.enqueue(
    topic text,
    payload jsonb default '{}',
    idempotency_key text default null,
    available_at timestamptz default null,
    priority integer default 0,
    delay interval default null)
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
    v_at := brooq._available_at(v_now, enqueue.available_at, enqueue.delay);

    loop
        insert into brooq.job (topic, payload, priority, max_attempts, idempotency_key,
                               available_at, created_at, updated_at)
        values (enqueue.topic, enqueue.payload, enqueue.priority, v_max_attempts, v_key,
                v_at, v_now, v_now)
        on conflict (topic, idempotency_key) where idempotency_key is not null do nothing
        returning id into v_id;
        exit when v_id is not null;
        -- The key exists: ON CONFLICT waited for a concurrent inserter, and this
        -- statement's fresh snapshot sees its committed row. Loop only if that row
        -- was purged in between.
        select j.id into v_id from brooq.job j
        where j.topic = enqueue.topic and j.idempotency_key = v_key;
        if found then
            return query select v_id, false;
            return;
        end if;
    end loop;
    if v_notify and v_at <= v_now then
        perform pg_notify('brooq', enqueue.topic);
    end if;
    return query select v_id, true;
end
$$;

comment on function brooq.enqueue(text, jsonb, text, timestamptz, integer, interval) is
'Enqueue one job in the caller''s transaction; returns (id, created). Errors: 22004 NULL argument, 42704 unknown topic, 54000 payload too large, 22023 bad key, time or delay.';

revoke all on function brooq.enqueue(text, jsonb, text, timestamptz, integer, interval) from public;
grant execute on function brooq.enqueue(text, jsonb, text, timestamptz, integer, interval) to brooq_producer;

commit;
