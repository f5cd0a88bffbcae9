-- Revert brooq:function_declare_topic from pg
-- Written by hand (the rework added max_lease, max_lease_losses, the flow limits, max_execution and the retention policies to the signature): drops the new
-- signature and the private brooq._write_topic, then restores function_declare_topic@v0.1.0, the body of its deploy script.

begin;

drop function brooq.declare_topic(text, integer, interval, interval, interval, integer, boolean, interval, integer, integer, integer, interval, interval, boolean, boolean);
drop function brooq._write_topic(brooq.topic);

-- brooq.declare_topic(name, max_attempts, backoff_base, backoff_max, retention,
--                     max_payload_bytes, notify) -> brooq.topic
--
-- Creates a topic or sets all of its settings (idempotent). A declaration is the
-- whole truth: a setting you leave out takes its default again. Does not change
-- whether the topic is paused. max_attempts is copied into each job at enqueue:
-- jobs already queued keep the value they were enqueued with.
--
-- Parameters:
--   name               lowercase letters, digits, '.', '-', '_'; 1 to 128 chars
--   max_attempts       claims before a failure is final (dead); 1 to 1000
--   backoff_base       first retry delay; > 0
--   backoff_max        cap on retry delays; >= backoff_base; at most 100 years
--   retention          how long terminal jobs are kept before purge; 0 = forever;
--                      at most 100 years (longer ones would overflow timestamptz in
--                      settle and purge)
--   max_payload_bytes  largest accepted payload (bytes of its JSON text); 1 B to 256 MiB
--   notify             NOTIFY brooq on enqueue to wake workers (off: they poll)
--
-- Returns: the topic row as stored.
-- Errors:
--   22004 null_value_not_allowed   a NULL argument
--   22023 invalid_parameter_value  a bad name or setting
-- Touches: inserts or updates one row of brooq.topic.
create or replace function brooq.declare_topic(
    name text,
    max_attempts integer default 5,
    backoff_base interval default '1 second',
    backoff_max interval default '1 minute',
    retention interval default '30 days',
    max_payload_bytes integer default 1048576,
    notify boolean default true)
returns brooq.topic
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_now timestamptz := brooq._now();
    v_topic brooq.topic;
begin
    if declare_topic.name is null or declare_topic.max_attempts is null
        or declare_topic.backoff_base is null or declare_topic.backoff_max is null
        or declare_topic.retention is null or declare_topic.max_payload_bytes is null
        or declare_topic.notify is null then
        raise exception 'brooq.declare_topic: arguments must not be NULL'
            using errcode = 'null_value_not_allowed',
                  hint = 'Leave an argument out to take its default.';
    end if;
    if declare_topic.name !~ '^[a-z0-9._-]{1,128}$' then
        raise exception 'invalid topic name "%"', left(declare_topic.name, 200)
            using errcode = 'invalid_parameter_value',
                  detail = format('The name is %s characters long.', length(declare_topic.name)),
                  hint = 'Use 1 to 128 lowercase letters, digits, ".", "-" or "_".';
    end if;
    if declare_topic.max_attempts not between 1 and 1000 then
        raise exception 'invalid max_attempts % for topic "%"', declare_topic.max_attempts, declare_topic.name
            using errcode = 'invalid_parameter_value',
                  hint = 'max_attempts must be between 1 and 1000.';
    end if;
    if declare_topic.backoff_base <= interval '0' then
        raise exception 'invalid backoff_base % for topic "%"', declare_topic.backoff_base, declare_topic.name
            using errcode = 'invalid_parameter_value',
                  hint = 'backoff_base must be positive, e.g. ''1 second''.';
    end if;
    if declare_topic.backoff_max < declare_topic.backoff_base then
        raise exception 'invalid backoff_max % for topic "%": below backoff_base %',
                declare_topic.backoff_max, declare_topic.name, declare_topic.backoff_base
            using errcode = 'invalid_parameter_value',
                  hint = 'backoff_max must be at least backoff_base.';
    end if;
    if declare_topic.retention < interval '0' then
        raise exception 'invalid retention % for topic "%"', declare_topic.retention, declare_topic.name
            using errcode = 'invalid_parameter_value',
                  hint = 'retention must be zero (keep forever) or positive.';
    end if;
    if declare_topic.backoff_max > interval '100 years' or declare_topic.retention > interval '100 years' then
        raise exception 'invalid % % for topic "%": longer than 100 years',
                case when declare_topic.backoff_max > interval '100 years' then 'backoff_max' else 'retention' end,
                case when declare_topic.backoff_max > interval '100 years' then declare_topic.backoff_max
                     else declare_topic.retention end,
                declare_topic.name
            using errcode = 'invalid_parameter_value',
                  hint = 'Durations are at most 100 years; a retention of 0 keeps jobs forever.';
    end if;
    -- Intervals compare as if a month were 30 days, so '70000000 mons -2099999999 days'
    -- is "1 day" to the checks above, yet now + it overflows. Settle computes now +
    -- backoff, purge now - retention: those instants must exist. (Not a hot path.)
    begin
        perform v_now + declare_topic.backoff_base, v_now + declare_topic.backoff_max,
                v_now - declare_topic.retention;
    exception when datetime_field_overflow then
        raise exception 'invalid durations for topic "%": now + backoff or now - retention is out of range',
                declare_topic.name
            using errcode = 'invalid_parameter_value',
                  hint = 'Write durations without huge negative parts, e.g. ''90 days''.';
    end;
    if declare_topic.max_payload_bytes not between 1 and 268435455 then
        raise exception 'invalid max_payload_bytes % for topic "%"', declare_topic.max_payload_bytes, declare_topic.name
            using errcode = 'invalid_parameter_value',
                  hint = 'max_payload_bytes must be between 1 and 268435455 (256 MiB).';
    end if;

    insert into brooq.topic as t (name, max_attempts, backoff_base, backoff_max, retention,
                                  max_payload_bytes, notify, created_at, updated_at)
    values (declare_topic.name, declare_topic.max_attempts, declare_topic.backoff_base,
            declare_topic.backoff_max, declare_topic.retention, declare_topic.max_payload_bytes,
            declare_topic.notify, v_now, v_now)
    on conflict on constraint topic_pkey do update
        set max_attempts = excluded.max_attempts,
            backoff_base = excluded.backoff_base,
            backoff_max = excluded.backoff_max,
            retention = excluded.retention,
            max_payload_bytes = excluded.max_payload_bytes,
            notify = excluded.notify,
            updated_at = excluded.updated_at
    returning t.* into v_topic;
    return v_topic;
end
$$;

comment on function brooq.declare_topic(text, integer, interval, interval, interval, integer, boolean) is
'Create a topic or set all its settings (idempotent; omitted settings take their defaults). Errors: 22004 NULL argument, 22023 bad name or setting.';

revoke all on function brooq.declare_topic(text, integer, interval, interval, interval, integer, boolean) from public;
grant execute on function brooq.declare_topic(text, integer, interval, interval, interval, integer, boolean) to brooq_admin;

commit;
