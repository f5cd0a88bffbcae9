-- brooq.pause_topic(name) -> boolean
-- brooq.resume_topic(name) -> boolean
--
-- Pause: claim skips the topic's jobs (enqueue still accepts them; jobs in
-- flight finish normally). Resume: claim takes them again.
-- Returns: true when the call changed the topic, false when it already was so.
-- Errors:
--   22004 null_value_not_allowed  name is NULL
--   42704 undefined_object        no such topic
-- Touches: updates one row of brooq.topic.
create or replace function brooq._set_paused(name text, paused boolean)
returns boolean
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
    v_was boolean;
begin
    if _set_paused.name is null then
        raise exception 'brooq.%: name must not be NULL', case when _set_paused.paused then 'pause_topic' else 'resume_topic' end
            using errcode = 'null_value_not_allowed',
                  hint = 'Name a declared topic.';
    end if;
    select t.paused into v_was from brooq.topic t where t.name = _set_paused.name for no key update;
    if not found then
        raise exception 'topic "%" does not exist', left(_set_paused.name, 200)
            using errcode = 'undefined_object',
                  hint = 'Declare it first with brooq.declare_topic(name => ...).';
    end if;
    if v_was = _set_paused.paused then
        return false;
    end if;
    update brooq.topic t set paused = _set_paused.paused, updated_at = brooq._now()
    where t.name = _set_paused.name;
    return true;
end
$$;

create or replace function brooq.pause_topic(name text)
returns boolean
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
begin
    return brooq._set_paused(pause_topic.name, true);
end
$$;

create or replace function brooq.resume_topic(name text)
returns boolean
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
begin
    return brooq._set_paused(resume_topic.name, false);
end
$$;

comment on function brooq._set_paused(text, boolean) is
'Private: the body of pause_topic and resume_topic.';

comment on function brooq.pause_topic(text) is
'Stop claims of a topic''s jobs; true if it was running. Errors: 22004 NULL name, 42704 unknown topic.';
comment on function brooq.resume_topic(text) is
'Let claims take a paused topic''s jobs again; true if it was paused. Errors: 22004 NULL name, 42704 unknown topic.';

revoke all on function brooq._set_paused(text, boolean) from public;
revoke all on function brooq.pause_topic(text) from public;
revoke all on function brooq.resume_topic(text) from public;
grant execute on function brooq.pause_topic(text) to brooq_admin;
grant execute on function brooq.resume_topic(text) to brooq_admin;
