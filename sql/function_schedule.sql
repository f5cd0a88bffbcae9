-- brooq.schedule(name, cron, topic, payload, priority) -> bigint
-- brooq.unschedule(name) -> boolean
-- brooq._schedule_tick(name) -> bigint           (what pg_cron runs)
-- brooq._schedule_tick_at(cron, at) -> timestamptz
-- view brooq.schedules
--
-- Periodic jobs on pg_cron. schedule registers (idempotently: the same name
-- again updates it and keeps its pg_cron job id) a row of brooq.schedule and a
-- pg_cron job named brooq_schedule.<name> whose command is
--   select brooq._schedule_tick('<name>')
-- Each run enqueues one job of the schedule's topic, payload and priority, with
-- the idempotency key
--   schedule:<name>:<tick>     e.g. schedule:nightly:2030-01-01T03:00:00Z
-- where <tick> is the run's time cut down to the schedule's granularity: the
-- minute for a cron schedule (pg_cron starts a job within its minute), the
-- N-second step since the epoch for pg_cron's 'N seconds' form (pg_cron 1.5+;
-- two runs are at least N seconds apart, so never in one step). A tick that runs
-- twice (a retry, a second scheduler, a manual call) finds its key taken and
-- enqueues nothing more: exactly one job per tick. A run that starts more than a
-- step late shares the next tick's key, and that tick enqueues nothing.
--
-- The pg_cron job runs as brooq's owner (schedule is SECURITY DEFINER, and
-- pg_cron runs a job as the role that scheduled it), in this database; its
-- command names the schedule only and is schema-qualified, so nothing in it
-- resolves through a search_path (the topic and payload are read from the row).
-- pg_cron must be installed here (see brooq.schedule_maintenance).
--
-- schedule:
--   name      1 to 48 of a-z 0-9 . - _
--   cron      a pg_cron schedule, at most 100 characters ('0 3 * * *', '*/5 * * * *',
--             '30 seconds' on pg_cron 1.5+)
--   topic     a declared topic
--   payload   the payload of every job (default '{}'), at most the topic's
--             max_payload_bytes
--   priority  the priority of every job (default 0)
--   Returns: the pg_cron job id.
-- unschedule: removes the schedule and its pg_cron job. Returns true when there
--   was one, false when not. Works without pg_cron (then only the row goes).
-- Errors:
--   22004 null_value_not_allowed           a NULL argument
--   22023 invalid_parameter_value          a bad name; a schedule over 100
--                                          characters, or one pg_cron rejects
--   42704 undefined_object                 the topic was not declared
--   54000 program_limit_exceeded           the payload is larger than the topic allows
--   55000 object_not_in_prerequisite_state schedule: pg_cron is not installed here
-- Touches: brooq.schedule (one row), cron.job (one row); each tick inserts at
-- most one row into brooq.job and updates the schedule's last_tick_at, last_job_id.
create or replace function brooq._schedule_tick_at(cron text, at timestamptz)
returns timestamptz
language plpgsql
immutable
set search_path = pg_catalog, pg_temp
as $$
declare
    v_step integer := coalesce(nullif(substring(_schedule_tick_at.cron from '^\s*([0-9]{1,5})\s*seconds?\s*$'), '')::integer, 0);
begin
    if v_step < 1 then
        v_step := 60;  -- a cron schedule: pg_cron's granularity is the minute
    end if;
    return to_timestamp(floor(extract(epoch from _schedule_tick_at.at) / v_step) * v_step);
end
$$;

create or replace function brooq._schedule_tick(name text)
returns bigint
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
    v_schedule brooq.schedule;
    v_tick timestamptz;
    v_id bigint;
begin
    select s.* into v_schedule from brooq.schedule s where s.name = _schedule_tick.name for no key update;
    if not found then
        return null;  -- unscheduled while pg_cron was running it
    end if;
    v_tick := brooq._schedule_tick_at(v_schedule.cron, brooq._now());
    select e.id into v_id
      from brooq.enqueue(v_schedule.topic, v_schedule.payload,
                         idempotency_key => format('schedule:%s:%s', v_schedule.name,
                                                   to_char(v_tick at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')),
                         priority => v_schedule.priority) as e;
    update brooq.schedule s
       set last_tick_at = v_tick, last_job_id = v_id
     where s.name = v_schedule.name;
    return v_id;
end
$$;

create or replace function brooq.schedule(
    name text,
    cron text,
    topic text,
    payload jsonb default '{}',
    priority integer default 0)
returns bigint
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_now timestamptz := brooq._now();
    v_max_bytes integer;
    v_jobid bigint;
begin
    if schedule.name is null or schedule.cron is null or schedule.topic is null
       or schedule.payload is null or schedule.priority is null then
        raise exception 'brooq.schedule: name, cron, topic, payload and priority must not be NULL'
            using errcode = 'null_value_not_allowed',
                  hint = 'Leave payload and priority out for their defaults (''{}'' and 0).';
    end if;
    if schedule.name !~ '^[a-z0-9._-]{1,48}$' then
        raise exception 'invalid schedule name "%"', left(schedule.name, 60)
            using errcode = 'invalid_parameter_value',
                  hint = 'Use 1 to 48 lowercase letters, digits, ".", "-" or "_".';
    end if;
    if length(schedule.cron) > 100 then
        raise exception 'invalid schedule "%...": longer than 100 characters', left(schedule.cron, 40)
            using errcode = 'invalid_parameter_value',
                  hint = 'Give a cron schedule such as ''*/5 * * * *'' or ''30 seconds''.';
    end if;
    select t.max_payload_bytes into v_max_bytes from brooq.topic t where t.name = schedule.topic;
    if not found then
        raise exception 'topic "%" does not exist', left(schedule.topic, 200)
            using errcode = 'undefined_object',
                  hint = 'Declare it first with brooq.declare_topic(name => ...).';
    end if;
    if octet_length(schedule.payload::text) > v_max_bytes then
        raise exception 'payload of % bytes is larger than the % bytes allowed for topic "%"',
                octet_length(schedule.payload::text), v_max_bytes, schedule.topic
            using errcode = 'program_limit_exceeded',
                  hint = 'Store large data elsewhere and enqueue a reference, or raise max_payload_bytes with brooq.declare_topic.';
    end if;
    perform brooq._require_pg_cron();
    insert into brooq.schedule as s (name, cron, topic, payload, priority, created_at, updated_at)
    values (schedule.name, schedule.cron, schedule.topic, schedule.payload, schedule.priority, v_now, v_now)
    on conflict on constraint schedule_pkey do update
       set cron = excluded.cron, topic = excluded.topic, payload = excluded.payload,
           priority = excluded.priority, updated_at = excluded.updated_at;
    -- pg_cron checks the schedule (22023 when it rejects it, and the row above
    -- rolls back with the statement). Dynamic: the parameter cron would shadow the
    -- schema cron in a static call.
    execute 'select cron.schedule($1, $2, $3)' into v_jobid
      using 'brooq_schedule.' || schedule.name, schedule.cron,
            format('select brooq._schedule_tick(%L)', schedule.name);
    return v_jobid;
end
$$;

create or replace function brooq.unschedule(name text)
returns boolean
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_found boolean;
    v_job bigint;
begin
    if unschedule.name is null then
        raise exception 'brooq.unschedule: name must not be NULL'
            using errcode = 'null_value_not_allowed',
                  hint = 'Name a schedule: select name from brooq.schedules.';
    end if;
    delete from brooq.schedule s where s.name = unschedule.name;
    v_found := found;
    if to_regnamespace('cron') is not null then
        for v_job in
            execute 'select c.jobid from cron.job c where c.jobname = $1 and c.username = current_user'
              using 'brooq_schedule.' || unschedule.name
        loop
            perform cron.unschedule(v_job);
            v_found := true;
        end loop;
    end if;
    return v_found;
end
$$;

-- brooq.schedules: every periodic job, and the last job it enqueued.
create or replace view brooq.schedules as
select s.name, s.cron, s.topic, s.payload, s.priority, s.created_at, s.updated_at,
       s.last_tick_at, s.last_job_id, j.state as last_job_state
  from brooq.schedule s
  left join brooq.job j on j.id = s.last_job_id;

comment on view brooq.schedules is
'Periodic jobs (brooq.schedule): schedule, topic, payload, priority, and the tick, id and state of the last job enqueued.';

comment on function brooq._schedule_tick_at(text, timestamptz) is
'Private: the tick an instant belongs to: the minute, or the N-second step of an ''N seconds'' schedule.';
comment on function brooq._schedule_tick(text) is
'Private: what pg_cron runs for a schedule: enqueue its job once per tick (idempotency key schedule:<name>:<tick>); the job id, NULL when the schedule is gone.';
comment on function brooq.schedule(text, text, text, jsonb, integer) is
'Register (idempotently) a periodic job on pg_cron: one job of topic per tick; returns the pg_cron job id. Errors: 22004 NULL, 22023 bad name or schedule, 42704 unknown topic, 54000 payload too large, 55000 pg_cron missing.';
comment on function brooq.unschedule(text) is
'Remove a periodic job and its pg_cron job; true if there was one. Errors: 22004 NULL name.';

revoke all on function brooq._schedule_tick_at(text, timestamptz) from public;
revoke all on function brooq._schedule_tick(text) from public;
revoke all on function brooq.schedule(text, text, text, jsonb, integer) from public;
revoke all on function brooq.unschedule(text) from public;
grant execute on function brooq.schedule(text, text, text, jsonb, integer) to brooq_admin;
grant execute on function brooq.unschedule(text) to brooq_admin;
revoke all on brooq.schedules from public;
grant select on brooq.schedules to brooq_worker, brooq_admin;
