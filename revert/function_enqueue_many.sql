-- Revert brooq:function_enqueue_many from pg
-- Written by hand (the rework added group_keys, trace_context and the edges to the signature): drops the new signature, then
-- restores function_enqueue_many@v0.1.0, the body of its deploy script.

begin;

drop function brooq.enqueue_many(text, jsonb[], text[], timestamptz, integer, interval, text[], jsonb, integer[], bigint[], text);

-- brooq.enqueue_many(topic, payloads, idempotency_keys, available_at, priority, delay)
--   -> setof brooq.enqueued, one row per payload, in input order
--
-- The bulk path: enqueues many jobs of one topic in one call, in the caller's
-- transaction. Same rules as brooq.enqueue, per element.
--
-- Parameters:
--   topic             a declared topic
--   payloads          jsonb[]; no NULL elements; each at most max_payload_bytes
--   idempotency_keys  text[] of the same length, or NULL for no keys; NULL or
--                     '' elements = no key. A key repeated inside the batch gives
--                     every occurrence the first one's id (created = false after
--                     the first).
--   available_at, priority, delay   as in brooq.enqueue, for every job
--
-- Returns: (id, created) per payload, in input order. When a key's old job is
-- purged while the call runs, the job is inserted after all, as brooq.enqueue
-- does (two such calls with the same keys at once may then deadlock: 40P01, retry).
-- Errors:
--   22004 null_value_not_allowed   topic, payloads, priority or a payload is NULL
--   42704 undefined_object         the topic was not declared
--   54000 program_limit_exceeded   a payload is too large (its index is named)
--   22023 invalid_parameter_value  keys array of another length; a key too long;
--                                  bad available_at or delay
-- Touches: inserts up to cardinality(payloads) rows into brooq.job; on error none.
create or replace function brooq.enqueue_many(
    topic text,
    payloads jsonb[],
    idempotency_keys text[] default null,
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
    if enqueue_many.idempotency_keys is not null
        and coalesce(cardinality(enqueue_many.idempotency_keys), 0) <> v_n then
        raise exception 'idempotency_keys has % elements, payloads has %',
                coalesce(cardinality(enqueue_many.idempotency_keys), 0), v_n
            using errcode = 'invalid_parameter_value',
                  hint = 'Give one key per payload (NULL for none), or NULL for no keys at all.';
    end if;
    v_at := brooq._available_at(v_now, enqueue_many.available_at, enqueue_many.delay);
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

    -- Ids are drawn first, so that each input element knows its own row.
    v_ids := array(select nextval('brooq.job_id_seq'::regclass) from generate_series(1, v_n));

    if coalesce(cardinality(array_remove(array_remove(enqueue_many.idempotency_keys, null), '')), 0) = 0 then
        -- No key in the batch (the bulk case): nothing can conflict, so a plain
        -- insert, without ON CONFLICT's speculative insertion of every row (about
        -- 15% of a batch's time) and without reading the ids back.
        insert into brooq.job (id, topic, payload, priority, max_attempts, idempotency_key,
                               available_at, created_at, updated_at)
        select u.id, enqueue_many.topic, u.payload, enqueue_many.priority, v_max_attempts,
               null, v_at, v_now, v_now
          from unnest(v_ids, enqueue_many.payloads) as u(id, payload);
        v_created := v_ids;
        v_out := v_ids;
        v_new := array_fill(true, array[v_n]);
    else
        with inserted as (
            insert into brooq.job (id, topic, payload, priority, max_attempts, idempotency_key,
                                   available_at, created_at, updated_at)
            select u.id, enqueue_many.topic, u.payload, enqueue_many.priority, v_max_attempts,
                   nullif(u.key, ''), v_at, v_now, v_now
              from unnest(v_ids, enqueue_many.payloads, enqueue_many.idempotency_keys) as u(id, payload, key)
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
                                       available_at, created_at, updated_at)
                select u.id, enqueue_many.topic, u.payload, enqueue_many.priority, v_max_attempts,
                       nullif(u.key, ''), v_at, v_now, v_now
                  from unnest(v_ids, enqueue_many.payloads, enqueue_many.idempotency_keys, v_out)
                       as u(id, payload, key, got)
                 where u.got is null
                 order by u.key, u.id
                on conflict (topic, idempotency_key) where idempotency_key is not null do nothing
                returning id
            )
            select v_created || coalesce(array_agg(inserted.id), '{}') into v_created from inserted;
        end loop;

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

comment on function brooq.enqueue_many(text, jsonb[], text[], timestamptz, integer, interval) is
'Enqueue many jobs of one topic in one call; returns (id, created) per payload in input order. Errors: 22004, 42704, 54000, 22023 (as enqueue, naming the element).';

revoke all on function brooq.enqueue_many(text, jsonb[], text[], timestamptz, integer, interval) from public;
grant execute on function brooq.enqueue_many(text, jsonb[], text[], timestamptz, integer, interval) to brooq_producer;

commit;
