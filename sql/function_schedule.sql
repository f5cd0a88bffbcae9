-- brooq.schedule(name, cron, topic, payload, priority, ticker) -> bigint
-- brooq.unschedule(name) -> boolean
-- brooq.tick_schedules(max_ticks) -> setof brooq.ticked_job   (what the workers run)
-- brooq._schedule_tick(name) -> bigint           (what pg_cron runs)
-- brooq._schedule_tick_at(cron, at) -> timestamptz
-- brooq._schedule_next(cron, after) -> timestamptz
-- brooq._cron_values(field, lo, hi, what) -> integer[]
-- view brooq.schedules
--
-- Periodic jobs, ticked by pg_cron or by the workers. schedule registers
-- (idempotently: the same name again updates it) a row of brooq.schedule whose
-- ticker is one of:
--   pg_cron   a pg_cron job named brooq_schedule.<name> (kept when the same name is
--             scheduled again) whose command is select brooq._schedule_tick('<name>').
--             Each run enqueues one job, its tick the run's time cut down to the
--             schedule's granularity: the minute for a cron schedule (pg_cron starts
--             a job within its minute), the N-second step since the epoch for
--             pg_cron's 'N seconds' form (pg_cron 1.5+; two runs are at least N
--             seconds apart, so never in one step). A run that starts more than a
--             step late takes the next tick, and that tick's run enqueues nothing.
--   workers   no pg_cron job: every running worker calls brooq.tick_schedules about
--             once a second, which enqueues a job for each tick that has come
--             (next_tick_at), each tick of a 5- or 6-field cron schedule (the 6th
--             field, first, is the second) or of an 'N seconds' step, in UTC.
-- ticker NULL (the default) chooses: pg_cron where it is installed in this
-- database and can run the schedule (5 fields; 'N seconds' from pg_cron 1.5),
-- else the workers. Either way exactly one job per tick, and what makes it so is
-- the schedule's row, which only brooq's functions write or lock: a tick locks it,
-- enqueues and records the tick (last_tick_at, last_job_id; the workers' ticks also
-- advance next_tick_at) in one transaction, so a tick that runs twice (a retry, a
-- second scheduler, a manual call, two workers) finds it done and enqueues nothing
-- more. The tick's job has no idempotency key: no producer's transaction holding
-- a key can make a tick wait, and no producer's job can take a tick's place.
--
-- tick_schedules takes the due rows of the workers' schedules FOR NO KEY UPDATE
-- SKIP LOCKED, so of several workers ticking at once each schedule is ticked by
-- one; enqueues the tick's job and advances next_tick_at, in the caller's
-- transaction: a worker that dies in the middle rolls it all back, and the next
-- call (its own or another worker's) ticks the same tick. Lateness: each tick
-- gets its job also when the workers reach it late (a busy or dying worker), as
-- long as it is at most a minute late; after a longer gap (no worker ran, the
-- database was down) the schedule gets one job, for the first tick it missed, and
-- goes on with the first tick after now: the ticks between are skipped, as pg_cron
-- skips the runs it missed while the server was down. A tick whose enqueue fails
-- (a topic that refuses the payload now) is skipped with the error in
-- last_error and in its result row; one that waited more than 500 ms for a lock
-- (55P03: only an admin's DDL or drop_topic can hold one it needs) or lost a
-- deadlock or serialization race stays owed, for the next call. A worker role
-- that calls tick_schedules in a transaction it keeps open keeps the schedules it
-- ticked locked until it ends: the other workers skip them meanwhile (the worker
-- role is trusted; the Python worker ticks in a statement of its own).
--
-- The pg_cron job runs as brooq's owner (schedule is SECURITY DEFINER, and
-- pg_cron runs a job as the role that scheduled it), in this database; its
-- command names the schedule only and is schema-qualified, so nothing in it
-- resolves through a search_path (the topic and payload are read from the row).
--
-- schedule:
--   name      1 to 48 of a-z 0-9 . - _
--   cron      at most 100 characters: '0 3 * * *', '*/5 * * * *' (minute hour
--             day-of-month month day-of-week: *, n, a-b, */s, a-b/s, lists, names
--             jan-dec and sun-sat, 0 or 7 for Sunday; when both days are
--             restricted, either matches), '*/10 * * * * *' (6 fields, seconds
--             first: the workers only), '@hourly', '@daily', '@weekly',
--             '@monthly', '@yearly', or '1 second' to '59 seconds'
--   topic     a declared topic
--   payload   the payload of every job (default '{}'), at most the topic's
--             max_payload_bytes
--   priority  the priority of every job (default 0)
--   ticker    'pg_cron', 'workers', or NULL (default): pg_cron where it can,
--             else the workers
--   Returns: the pg_cron job id; NULL when the workers tick the schedule.
-- unschedule: removes the schedule and its pg_cron job. Returns true when there
--   was one, false when not. Works without pg_cron (then only the row goes).
-- tick_schedules:
--   max_ticks  at most this many ticks in one call, 1 to 10000 (default 1000)
--   Returns: one brooq.ticked_job per tick done (or failed), none when nothing
--   was due. Granted to brooq_worker.
-- Errors:
--   22004 null_value_not_allowed           a NULL argument (but ticker)
--   22023 invalid_parameter_value          a bad name or ticker; a schedule over 100
--                                          characters, one that does not parse or
--                                          never fires, or one pg_cron rejects;
--                                          max_ticks out of range
--   42704 undefined_object                 the topic was not declared
--   54000 program_limit_exceeded           the payload is larger than the topic allows
--   55000 object_not_in_prerequisite_state ticker 'pg_cron': pg_cron is not
--                                          installed here
--   55P03 lock_not_available               tick_schedules: a lock outside a tick (on
--                                          brooq.schedule: an admin's DDL) held more
--                                          than 500 ms; a tick's own wait is reported
--                                          in its row, not raised
-- Touches: brooq.schedule (one row), cron.job (one row, pg_cron's); each tick
-- inserts at most one row into brooq.job and updates the schedule's last_tick_at,
-- last_job_id (and next_tick_at, last_error: the workers').
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

create or replace function brooq._cron_values(field text, lo integer, hi integer, what text)
returns integer[]
language plpgsql
immutable
set search_path = pg_catalog, pg_temp
as $$
declare
    v_names text[] := case _cron_values.what
        when 'month' then array['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec']
        when 'day of week' then array['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'] end;
    v_base integer := case _cron_values.what when 'month' then 1 else 0 end;
    v_part text;
    v_match text[];
    v_from integer;
    v_to integer;
    v_step integer;
    v_values integer[] := '{}';
begin
    foreach v_part in array string_to_array(_cron_values.field, ',') loop
        v_match := regexp_match(v_part, '^(\*|[0-9]{1,2}|[a-z]{3})(?:-([0-9]{1,2}|[a-z]{3}))?(?:/([0-9]{1,2}))?$');
        if v_match is null or (v_match[1] = '*' and v_match[2] is not null) then
            raise exception 'invalid schedule: "%" is not a % field', left(v_part, 20), _cron_values.what
                using errcode = 'invalid_parameter_value',
                      hint = 'Write each field as *, n, a-b, */s, a-b/s or a list of those, e.g. ''*/5 * * * *''.';
        end if;
        v_from := case when v_match[1] = '*' then _cron_values.lo
                       when v_match[1] ~ '^[0-9]+$' then v_match[1]::integer
                       else array_position(v_names, v_match[1]) - 1 + v_base end;
        v_to := case when v_match[1] = '*' or (v_match[2] is null and v_match[3] is not null) then _cron_values.hi
                     when v_match[2] is null then v_from
                     when v_match[2] ~ '^[0-9]+$' then v_match[2]::integer
                     else array_position(v_names, v_match[2]) - 1 + v_base end;
        if v_from is null or v_to is null or v_from not between _cron_values.lo and _cron_values.hi or v_to not between _cron_values.lo and _cron_values.hi then
            raise exception 'invalid schedule: "%" is not a % field (% to %)', left(v_part, 20), _cron_values.what,
                    _cron_values.lo, _cron_values.hi
                using errcode = 'invalid_parameter_value',
                      hint = 'Write each field as *, n, a-b, */s, a-b/s or a list of those, e.g. ''*/5 * * * *''.';
        end if;
        v_step := coalesce(v_match[3]::integer, 1);
        if v_step < 1 or v_from > v_to then
            raise exception 'invalid schedule: "%" is an empty % range', left(v_part, 20), _cron_values.what
                using errcode = 'invalid_parameter_value',
                      hint = 'Give a range low to high (a-b) and a step of at least 1 (*/s).';
        end if;
        v_values := v_values || array(select generate_series(v_from, v_to, v_step));
    end loop;
    return array(select distinct v from unnest(v_values) as v order by v);
end
$$;

create or replace function brooq._schedule_next(cron text, after timestamptz)
returns timestamptz
language plpgsql
immutable
set search_path = pg_catalog, pg_temp
as $$
declare
    v_cron text := lower(btrim(_schedule_next.cron));
    v_fields text[];
    v_step integer;
    v_sec integer[];
    v_min integer[];
    v_hour integer[];
    v_dom integer[];
    v_month integer[];
    v_dow integer[];
    v_either boolean;  -- both days restricted: either one matches (as in cron)
    v_dom_ok boolean;
    v_dow_ok boolean;
    v_from timestamp := date_trunc('second', _schedule_next.after at time zone 'UTC') + interval '1 second';
    v_day date := v_from::date;
    v_start integer[] := array[extract(hour from v_from)::integer, extract(minute from v_from)::integer,
                               extract(second from v_from)::integer];
    v_h integer;
    v_m integer;
    v_s integer;
begin
    if v_cron ~ '^[0-9]+\s*seconds?$' then
        v_step := substring(v_cron from '^([0-9]{1,2})\s*seconds?$')::integer;
        if v_step is null or v_step not between 1 and 59 then
            raise exception 'invalid schedule "%": a step of 1 to 59 seconds', left(_schedule_next.cron, 40)
                using errcode = 'invalid_parameter_value',
                      hint = 'For a minute or more, use a cron schedule such as ''*/2 * * * *''.';
        end if;
        return to_timestamp((floor(extract(epoch from _schedule_next.after) / v_step) + 1) * v_step);
    end if;
    v_cron := case v_cron
        when '@yearly' then '0 0 1 1 *' when '@annually' then '0 0 1 1 *' when '@monthly' then '0 0 1 * *'
        when '@weekly' then '0 0 * * 0' when '@daily' then '0 0 * * *' when '@midnight' then '0 0 * * *'
        when '@hourly' then '0 * * * *' else v_cron end;
    v_fields := regexp_split_to_array(v_cron, '\s+');
    if cardinality(v_fields) = 5 then
        v_fields := array['0'] || v_fields;
    elsif cardinality(v_fields) <> 6 then
        raise exception 'invalid schedule "%": % fields', left(_schedule_next.cron, 40), cardinality(v_fields)
            using errcode = 'invalid_parameter_value',
                  hint = 'Give 5 fields (minute hour day month weekday), 6 with the second first, or ''N seconds''.';
    end if;
    v_sec := brooq._cron_values(v_fields[1], 0, 59, 'second');
    v_min := brooq._cron_values(v_fields[2], 0, 59, 'minute');
    v_hour := brooq._cron_values(v_fields[3], 0, 23, 'hour');
    v_dom := brooq._cron_values(v_fields[4], 1, 31, 'day of month');
    v_month := brooq._cron_values(v_fields[5], 1, 12, 'month');
    v_dow := array(select distinct d operator(pg_catalog.%) 7
                     from unnest(brooq._cron_values(v_fields[6], 0, 7, 'day of week')) as d);
    v_either := v_fields[4] !~ '^\*' and v_fields[6] !~ '^\*';
    -- Day by day, for ten years at most (a 29 February on a Monday comes back within 28):
    -- the first time of day at or after the start that every field allows.
    for i in 0 .. 3660 loop
        v_dom_ok := extract(day from v_day)::integer = any(v_dom);
        v_dow_ok := extract(dow from v_day)::integer = any(v_dow);
        if extract(month from v_day)::integer = any(v_month)
           and ((v_either and (v_dom_ok or v_dow_ok)) or (not v_either and v_dom_ok and v_dow_ok)) then
            foreach v_h in array v_hour loop
                continue when v_h < v_start[1];
                foreach v_m in array v_min loop
                    continue when v_h = v_start[1] and v_m < v_start[2];
                    foreach v_s in array v_sec loop
                        continue when v_h = v_start[1] and v_m = v_start[2] and v_s < v_start[3];
                        return (v_day + make_time(v_h, v_m, v_s)) at time zone 'UTC';
                    end loop;
                end loop;
            end loop;
        end if;
        v_day := v_day + 1;
        v_start := array[-1, -1, -1];
    end loop;
    return null;  -- never within ten years (30 February)
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
    select s.* into v_schedule from brooq.schedule s
     where s.name = _schedule_tick.name and s.ticker = 'pg_cron'
       for no key update;
    if not found then
        return null;  -- unscheduled while pg_cron was running it, or the workers' now
    end if;
    v_tick := brooq._schedule_tick_at(v_schedule.cron, brooq._now());
    if v_tick <= v_schedule.last_tick_at then
        -- this tick has its job already (a second run, a second scheduler, a run that
        -- started a step late and took it), or the clock went back: nothing more
        return case when v_tick = v_schedule.last_tick_at then v_schedule.last_job_id end;
    end if;
    -- no idempotency key: the row locked above makes the tick once, and no other
    -- transaction's key can make it wait or take its place
    select e.id into v_id
      from brooq.enqueue(v_schedule.topic, v_schedule.payload, priority => v_schedule.priority) as e;
    update brooq.schedule s
       set last_tick_at = v_tick, last_job_id = v_id
     where s.name = v_schedule.name;
    return v_id;
end
$$;

create or replace function brooq.tick_schedules(max_ticks integer default 1000)
returns setof brooq.ticked_job
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_now timestamptz := brooq._now();
    v_left integer := tick_schedules.max_ticks;
    v_schedule record;
    v_tick timestamptz;
    v_next timestamptz;
    v_id bigint;
    v_created boolean;
    v_state text;
    v_error text;
    v_last_tick timestamptz;
    v_last_job bigint;
    v_last_error text;
    v_lock_timeout text := current_setting('lock_timeout');
begin
    if tick_schedules.max_ticks is null then
        raise exception 'brooq.tick_schedules: max_ticks must not be NULL'
            using errcode = 'null_value_not_allowed',
                  hint = 'Leave it out for its default (1000).';
    end if;
    if tick_schedules.max_ticks not between 1 and 10000 then
        raise exception 'max_ticks must be between 1 and 10000, not %', tick_schedules.max_ticks
            using errcode = 'invalid_parameter_value',
                  hint = 'Tick at most 10000 ticks a call; call again for the rest.';
    end if;
    -- A belt: nothing in a tick waits for a lock another role can hold (the schedule
    -- rows are skipped when locked, the jobs have no key, no group, no parents), but
    -- an admin's DDL or drop_topic could make it wait, and the workers tick on their
    -- claim loop's connection. Each lock wait is cut at 500 ms (or the caller's
    -- shorter lock_timeout): 55P03, and the tick stays owed for the next call.
    if v_lock_timeout = '0' or v_lock_timeout::interval > interval '500 milliseconds' then
        perform set_config('lock_timeout', '500ms', true);
    end if;
    for v_schedule in
        select s.name, s.cron, s.topic, s.payload, s.priority, s.next_tick_at,
               s.last_tick_at, s.last_job_id, s.last_error
          from brooq.schedule s
         where s.ticker = 'workers' and s.next_tick_at <= v_now
         order by s.next_tick_at, s.name
         for no key update of s skip locked
    loop
        exit when v_left = 0;
        v_tick := v_schedule.next_tick_at;
        v_last_tick := v_schedule.last_tick_at;
        v_last_job := v_schedule.last_job_id;
        v_last_error := v_schedule.last_error;
        while v_tick is not null and v_tick <= v_now and v_left > 0 loop
            v_state := null;
            v_error := null;
            begin
                -- no idempotency key: this schedule's row, locked above, makes the tick
                -- once; no other transaction's key can make it wait or take its place
                select e.id, e.created into v_id, v_created
                  from brooq.enqueue(v_schedule.topic, v_schedule.payload,
                                     priority => v_schedule.priority) as e;
            exception when others then
                get stacked diagnostics v_state = returned_sqlstate, v_error = message_text;
                v_id := null;
                v_created := false;
                v_error := left(v_state || ' ' || v_error, 300);
            end;
            v_left := v_left - 1;
            return next row(v_schedule.name, v_tick, v_id, v_created, v_error)::brooq.ticked_job;
            exit when v_state in ('55P03', '40001', '40P01');  -- the tick stays owed: the next call
            v_last_error := v_error;
            if v_id is not null then
                v_last_tick := v_tick;
                v_last_job := v_id;
            end if;
            v_next := brooq._schedule_next(v_schedule.cron, v_tick);
            if v_next < v_now - interval '1 minute' then
                v_next := brooq._schedule_next(v_schedule.cron, v_now);  -- a long gap: skip to now
            end if;
            v_tick := v_next;
        end loop;
        update brooq.schedule s
           set next_tick_at = v_tick, last_tick_at = v_last_tick, last_job_id = v_last_job,
               last_error = v_last_error
         where s.name = v_schedule.name;
    end loop;
    perform set_config('lock_timeout', v_lock_timeout, true);
end
$$;

create or replace function brooq.schedule(
    name text,
    cron text,
    topic text,
    payload jsonb default '{}',
    priority integer default 0,
    ticker text default null)
returns bigint
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_now timestamptz := brooq._now();
    v_max_bytes integer;
    v_ticker text := schedule.ticker;
    v_fields integer := cardinality(regexp_split_to_array(btrim(schedule.cron), '\s+'));
    v_seconds boolean := schedule.cron ~* '^\s*[0-9]+\s*seconds?\s*$';
    v_next timestamptz;
    v_jobid bigint;
    v_job bigint;
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
    if v_ticker is null then
        -- pg_cron where it is installed here and can run the schedule: 5 fields, or
        -- 'N seconds' from pg_cron 1.5 (Debian's 1.4 has no seconds); else the workers
        v_ticker := case when to_regnamespace('cron') is not null
                               and (v_fields = 5 or (v_seconds and exists (
                                        select from pg_extension x
                                         where x.extname = 'pg_cron'
                                           and string_to_array(split_part(x.extversion, '-', 1), '.')::integer[]
                                               >= array[1, 5])))
                         then 'pg_cron' else 'workers' end;
    elsif v_ticker not in ('pg_cron', 'workers') then
        raise exception 'invalid ticker "%"', left(v_ticker, 40)
            using errcode = 'invalid_parameter_value',
                  hint = 'Say ''pg_cron'' or ''workers'', or leave it out: pg_cron where it is installed here, else the workers.';
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
    if v_ticker = 'workers' then
        v_next := brooq._schedule_next(schedule.cron, v_now);  -- 22023 when it does not parse
        if v_next is null then
            raise exception 'invalid schedule "%": it never fires', left(schedule.cron, 40)
                using errcode = 'invalid_parameter_value',
                      hint = 'Check the day and the month: no 30 February.';
        end if;
    else
        perform brooq._require_pg_cron();
    end if;
    insert into brooq.schedule as s (name, cron, topic, payload, priority, created_at, updated_at,
                                     ticker, next_tick_at)
    values (schedule.name, schedule.cron, schedule.topic, schedule.payload, schedule.priority, v_now, v_now,
            v_ticker, v_next)
    on conflict on constraint schedule_pkey do update
       set cron = excluded.cron, topic = excluded.topic, payload = excluded.payload,
           priority = excluded.priority, updated_at = excluded.updated_at, ticker = excluded.ticker,
           -- the same schedule again (a deploy that registers it at each start) keeps the tick it owes
           next_tick_at = case when s.cron = excluded.cron and s.ticker = excluded.ticker
                               then s.next_tick_at else excluded.next_tick_at end,
           last_error = null;
    if v_ticker = 'workers' then
        -- from pg_cron to the workers: pg_cron's job goes
        if to_regnamespace('cron') is not null then
            for v_job in
                execute 'select c.jobid from cron.job c where c.jobname = $1 and c.username = current_user'
                  using 'brooq_schedule.' || schedule.name
            loop
                perform cron.unschedule(v_job);
            end loop;
        end if;
        return null;
    end if;
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

-- brooq.schedules: every periodic job, who ticks it, and the last job it enqueued.
create or replace view brooq.schedules as
select s.name, s.cron, s.ticker, s.topic, s.payload, s.priority, s.created_at, s.updated_at,
       s.next_tick_at, s.last_tick_at, s.last_job_id, j.state as last_job_state, s.last_error
  from brooq.schedule s
  left join brooq.job j on j.id = s.last_job_id;

comment on view brooq.schedules is
'Periodic jobs (brooq.schedule): schedule, ticker (pg_cron or workers), topic, payload, priority, the next tick the workers owe, and the tick, id and state of the last job enqueued, and the last tick''s error.';

comment on function brooq._schedule_tick_at(text, timestamptz) is
'Private: the tick an instant belongs to under pg_cron: the minute, or the N-second step of an ''N seconds'' schedule.';
comment on function brooq._cron_values(text, integer, integer, text) is
'Private: the values one cron field allows, sorted (*, n, a-b, */s, a-b/s, lists, month and weekday names). Errors: 22023.';
comment on function brooq._schedule_next(text, timestamptz) is
'Private: the first tick of a schedule after an instant, in UTC (5 or 6 cron fields, @daily and friends, ''N seconds''); NULL when it never fires within ten years. Errors: 22023 a schedule that does not parse.';
comment on function brooq._schedule_tick(text) is
'Private: what pg_cron runs for a schedule: enqueue its job once per tick (under the schedule''s row lock; a tick not after last_tick_at enqueues nothing); the job id, NULL when the schedule is gone or the workers tick it.';
comment on function brooq.tick_schedules(integer) is
'What the workers run about once a second: enqueue the job of every tick that has come of the schedules the workers tick (SKIP LOCKED: one worker per schedule; no idempotency key; lock waits cut at 500 ms); a row per tick, with the error of a tick that enqueued nothing (55P03, 40001, 40P01: the tick stays owed). Errors: 22004 NULL, 22023 max_ticks out of 1..10000.';
comment on function brooq.schedule(text, text, text, jsonb, integer, text) is
'Register (idempotently) a periodic job, ticked by pg_cron or by the workers: one job of topic per tick; returns the pg_cron job id, NULL when the workers tick it. Errors: 22004 NULL, 22023 bad name, schedule or ticker, 42704 unknown topic, 54000 payload too large, 55000 ticker pg_cron without pg_cron.';
comment on function brooq.unschedule(text) is
'Remove a periodic job and its pg_cron job; true if there was one. Errors: 22004 NULL name.';

revoke all on function brooq._schedule_tick_at(text, timestamptz) from public;
revoke all on function brooq._cron_values(text, integer, integer, text) from public;
revoke all on function brooq._schedule_next(text, timestamptz) from public;
revoke all on function brooq._schedule_tick(text) from public;
revoke all on function brooq.tick_schedules(integer) from public;
revoke all on function brooq.schedule(text, text, text, jsonb, integer, text) from public;
revoke all on function brooq.unschedule(text) from public;
grant execute on function brooq.tick_schedules(integer) to brooq_worker;
grant execute on function brooq.schedule(text, text, text, jsonb, integer, text) to brooq_admin;
grant execute on function brooq.unschedule(text) to brooq_admin;
revoke all on brooq.schedules from public;
grant select on brooq.schedules to brooq_worker, brooq_admin;
