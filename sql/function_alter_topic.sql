-- brooq.alter_topic(name, max_attempts, backoff_base, backoff_max, retention,
--                   max_payload_bytes, notify, max_lease, max_lease_losses,
--                   max_in_flight, rate, per, max_execution, retain_done,
--                   retain_payload, clear) -> brooq.topic
--
-- Changes only the settings it is given, of a topic that exists; the others keep
-- their values (brooq.declare_topic, by contrast, sets every setting). The
-- settings are those of declare_topic, checked by the same code with the same
-- errors. Does not change whether the topic is paused.
--
-- Parameters:
--   name       a declared topic
--   max_attempts ... retain_payload
--              each as in brooq.declare_topic; NULL (the default) = leave it as it is
--   clear      the settings to set back to none (no limit): any of 'max_in_flight',
--              'rate', 'per' and 'max_execution', the settings whose NULL means none.
--              Clearing 'rate' clears the rate limit, per with it; clearing only
--              'per' of a rate-limited topic gives it per's default, 1 second.
--              A setting may not be both given and cleared. NULL or '{}' (the
--              default): clear nothing.
--
-- Returns: the topic row as stored.
-- Errors:
--   22004 null_value_not_allowed   a NULL name
--   22023 invalid_parameter_value  a bad setting (as declare_topic), an unknown
--                                  setting in clear, a setting both given and cleared
--   42704 undefined_object         a topic that was never declared
-- Touches: updates one row of brooq.topic (locked while it is read, so two
-- alter_topic calls at once both take effect).
create or replace function brooq.alter_topic(
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
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v brooq.topic;
    v_clear text[] := coalesce(alter_topic.clear, '{}');
    v_bad text;
begin
    if alter_topic.name is null then
        raise exception 'brooq.alter_topic: name must not be NULL'
            using errcode = 'null_value_not_allowed',
                  hint = 'Name a declared topic.';
    end if;
    select t.* into v from brooq.topic t where t.name = alter_topic.name for no key update;
    if not found then
        raise exception 'topic "%" does not exist', left(alter_topic.name, 200)
            using errcode = 'undefined_object',
                  hint = 'Declare it first with brooq.declare_topic(name => ...).';
    end if;
    select c into v_bad from unnest(v_clear) as c
     where c is null or c not in ('max_in_flight', 'rate', 'per', 'max_execution') limit 1;
    if found then
        raise exception 'cannot clear "%" of topic "%"', left(coalesce(v_bad, 'NULL'), 200), v.name
            using errcode = 'invalid_parameter_value',
                  hint = 'clear names settings whose NULL means none: max_in_flight, rate, per, max_execution.';
    end if;
    select c into v_bad from unnest(v_clear) as c
     where (c = 'max_in_flight' and alter_topic.max_in_flight is not null)
        or (c = 'rate' and alter_topic.rate is not null)
        or (c = 'per' and alter_topic.per is not null)
        or (c = 'max_execution' and alter_topic.max_execution is not null) limit 1;
    if found then
        raise exception '% of topic "%" is both given and cleared', v_bad, v.name
            using errcode = 'invalid_parameter_value',
                  hint = 'Give a setting a value or name it in clear, not both.';
    end if;

    v.max_attempts := coalesce(alter_topic.max_attempts, v.max_attempts);
    v.backoff_base := coalesce(alter_topic.backoff_base, v.backoff_base);
    v.backoff_max := coalesce(alter_topic.backoff_max, v.backoff_max);
    v.retention := coalesce(alter_topic.retention, v.retention);
    v.max_payload_bytes := coalesce(alter_topic.max_payload_bytes, v.max_payload_bytes);
    v.notify := coalesce(alter_topic.notify, v.notify);
    v.max_lease := coalesce(alter_topic.max_lease, v.max_lease);
    v.max_lease_losses := coalesce(alter_topic.max_lease_losses, v.max_lease_losses);
    v.max_in_flight := case when 'max_in_flight' = any (v_clear) then null
                            else coalesce(alter_topic.max_in_flight, v.max_in_flight) end;
    v.rate := case when 'rate' = any (v_clear) then null else coalesce(alter_topic.rate, v.rate) end;
    -- a rate cleared takes its per along; a per given with it is refused (no rate)
    v.per := case when 'per' = any (v_clear) then null
                  when 'rate' = any (v_clear) then alter_topic.per
                  else coalesce(alter_topic.per, v.per) end;
    v.max_execution := case when 'max_execution' = any (v_clear) then null
                            else coalesce(alter_topic.max_execution, v.max_execution) end;
    v.retain_done := coalesce(alter_topic.retain_done, v.retain_done);
    v.retain_payload := coalesce(alter_topic.retain_payload, v.retain_payload);
    return brooq._write_topic(v);
end
$$;

comment on function brooq.alter_topic(text, integer, interval, interval, interval, integer, boolean, interval, integer, integer, integer, interval, interval, boolean, boolean, text[]) is
'Change only the settings given of a declared topic (NULL = leave as is); clear => array[''max_in_flight'', ''rate'', ''per'', ''max_execution''] sets those back to none. Errors: 22004 NULL name, 22023 bad setting or clear, 42704 unknown topic.';

revoke all on function brooq.alter_topic(text, integer, interval, interval, interval, integer, boolean, interval, integer, integer, integer, interval, interval, boolean, boolean, text[]) from public;
grant execute on function brooq.alter_topic(text, integer, interval, interval, interval, integer, boolean, interval, integer, integer, integer, interval, interval, boolean, boolean, text[]) to brooq_admin;
