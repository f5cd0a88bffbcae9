-- Durable steps (docs/architecture.md, "Durable steps"): a running job records what it
-- finished, so that a retry, or the next holder after a lease loss, returns it at once
-- instead of running it again; it sleeps, or waits for an event, without a worker.
--
-- brooq.checkpoint(worker, job_id, lease_token, name, result) -> setof brooq.checkpointed
-- brooq.steps(job_id, max_steps) -> setof brooq.step
-- brooq.sleep(worker, job_id, lease_token, step, until, duration) -> setof brooq.suspended
-- brooq.wait_for_event(worker, job_id, lease_token, step, event, timeout) -> setof brooq.awaited
--
-- The three writes are fenced as settle_many is: only the holder of the job's lease
-- (state processing, locked_by = worker, lease_token = its claim's token) writes;
-- any other caller gets no row, a normal answer (its lease was lost: canceled,
-- reaped, claimed again), and nothing is written. A step name is written once per
-- job (primary key (job_id, name)): the first write wins, a later one reads it back.
--
-- Ending an attempt without spending it: sleep and wait_for_event, when they must
-- wait, release the lease and make the job pending until the instant they wait for
-- (available_at), giving back the attempt claim charged (attempts - 1, as the
-- outcome preserve does; invariant 6), lease_losses back to 0. No worker holds the
-- job meanwhile: it is claimed again at that instant (or when an event wakes it),
-- and its handler runs again from the top, its finished steps returning at once.
-- The job stays in its ordered group's place while it waits (pending holds a group).
-- A topic's max_execution counts the time asleep: it runs from the first claim.

-- brooq.checkpointed: the result stored for a step, and whether this call stored it
-- (false: the step was stored before, by this holder or an earlier one).
create type brooq.checkpointed as (
    result  jsonb,
    created boolean
);

comment on type brooq.checkpointed is
'Result of checkpoint: the result stored for the step, created = false when it was stored before.';

-- brooq.step: a row of brooq.steps. kind: step, sleep, event, timeout (finished), or
-- waiting (the wait in progress: result {"event": name, "deadline": instant}).
create type brooq.step as (
    name    text,
    kind    text,
    result  jsonb,
    attempt integer,
    at      timestamptz
);

comment on type brooq.step is
'Result of steps: a step a job finished (step, sleep, event, timeout) or the wait it is in (waiting).';

-- brooq.suspended: what brooq.sleep did. state processing: the sleep is over (until
-- has come), the handler goes on; pending: the job was released until `until`.
create type brooq.suspended as (
    state brooq.job_state,
    until timestamptz
);

comment on type brooq.suspended is
'Result of sleep: processing (the sleep is over, go on) or pending (released until `until`).';

-- brooq.awaited: what brooq.wait_for_event did. outcome received: the payload is the
-- event's (the handler goes on); timeout: no event came before the deadline (the
-- handler goes on); waiting: the job was released until `until` (its deadline, or
-- now when an event came while it was being released).
create type brooq.awaited as (
    outcome text,
    payload jsonb,
    until   timestamptz
);

comment on type brooq.awaited is
'Result of wait_for_event: received (with the payload), timeout, or waiting (released until `until`).';

-- brooq.checkpoint(worker, job_id, lease_token, name, result)
--
-- Stores the result of the step `name` of a job the caller holds, once: the first
-- call for a name stores it (created true), every later one returns the stored
-- result (created false) whatever it passes. The row of the job is locked FOR SHARE
-- while it checks the fence, so a cancel, reap or settle that ends the lease
-- commits either before (no row: nothing stored) or after the step is stored.
--
-- Parameters:
--   worker, job_id, lease_token   the claim (as for settle)
--   name     the step's name, 1 to 200 characters, unique within the job
--   result   jsonb (NULL: none), at most the topic's max_payload_bytes
-- Returns: one row (result stored, created), or no row when the lease was lost.
-- Errors:
--   22004 null_value_not_allowed   worker, job_id, lease_token or name is NULL
--   22023 invalid_parameter_value  a name empty or longer than 200 characters;
--                                  a name the job used for a sleep or a wait
--   54000 program_limit_exceeded   a result above the topic's max_payload_bytes;
--                                  a job with 10,000 steps already
-- Touches: locks the job's row FOR SHARE; inserts a row of brooq.job_step.
create or replace function brooq.checkpoint(
    worker text,
    job_id bigint,
    lease_token bigint,
    name text,
    result jsonb default null)
returns setof brooq.checkpointed
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_now timestamptz := brooq._now();
    v_job record;
    v_step record;
    v_bytes integer;
begin
    if checkpoint.worker is null or checkpoint.job_id is null or checkpoint.lease_token is null
        or checkpoint.name is null then
        raise exception 'brooq.checkpoint: worker, job_id, lease_token and name must not be NULL'
            using errcode = 'null_value_not_allowed',
                  hint = 'Pass the claim (worker, job id, lease_token) and the step''s name.';
    end if;
    if checkpoint.name = '' or length(checkpoint.name) > 200 then
        raise exception 'invalid step name "%"', left(checkpoint.name, 40)
            using errcode = 'invalid_parameter_value',
                  hint = 'Name a step with 1 to 200 characters, unique within the job, e.g. ''charge''.';
    end if;
    select j.id, j.attempts, j.topic, coalesce(t.max_payload_bytes, 1048576) as max_bytes
      into v_job
      from brooq.job j
      left join brooq.topic t on t.name = j.topic
     where j.id = checkpoint.job_id
       and j.state = 'processing'
       and j.locked_by = checkpoint.worker
       and j.lease_token = checkpoint.lease_token
       for share of j;
    if not found then
        return;  -- the lease was lost: nothing is written
    end if;
    select s.kind, s.result into v_step
      from brooq.job_step s
     where s.job_id = checkpoint.job_id and s.name = checkpoint.name;
    if found then
        if v_step.kind <> 'step' then
            raise exception 'step "%" of job % is a %, not a step', left(checkpoint.name, 40), checkpoint.job_id, v_step.kind
                using errcode = 'invalid_parameter_value',
                      hint = 'Give each step, sleep and wait of a handler a name of its own.';
        end if;
        return query select v_step.result, false;
        return;
    end if;
    v_bytes := octet_length(checkpoint.result::text);
    if v_bytes > v_job.max_bytes then
        raise exception 'result of step "%" of job % is % bytes, larger than the % bytes allowed for topic "%"',
                left(checkpoint.name, 40), checkpoint.job_id, v_bytes, v_job.max_bytes, left(v_job.topic, 200)
            using errcode = 'program_limit_exceeded',
                  hint = 'Store large results elsewhere and checkpoint a reference, or raise max_payload_bytes with brooq.declare_topic.';
    end if;
    if (select count(*) from brooq.job_step s where s.job_id = checkpoint.job_id) >= 10000 then
        raise exception 'job % has 10000 steps already', checkpoint.job_id
            using errcode = 'program_limit_exceeded',
                  hint = 'Checkpoint at most 10000 steps per job: group small steps into one.';
    end if;
    insert into brooq.job_step (job_id, name, kind, result, attempt, at)
    values (checkpoint.job_id, checkpoint.name, 'step', checkpoint.result, v_job.attempts, v_now);
    return query select checkpoint.result, true;
end
$$;

comment on function brooq.checkpoint(text, bigint, bigint, text, jsonb) is
'Store the result of a step of a job the caller holds (fenced by worker and lease_token), once per step name: a later call returns the stored result (created = false); no row when the lease was lost. Errors: 22004 NULL argument, 22023 bad name or a name used by a sleep or wait, 54000 a result above max_payload_bytes or 10000 steps.';

revoke all on function brooq.checkpoint(text, bigint, bigint, text, jsonb) from public;
grant execute on function brooq.checkpoint(text, bigint, bigint, text, jsonb) to brooq_worker;

-- brooq.steps(job_id, max_steps) -> setof brooq.step, in the order they were finished
--
-- A job's finished steps with their results, and the wait it is in (kind waiting),
-- in one query: a handler reads them on request (the claim never carries them, so
-- no job's steps can make a claim fail or grow), as do brooq job and the dashboard,
-- which read the first max_steps only (a job may hold 10000 steps of up to
-- max_payload_bytes each: a page shows a bounded part). No rows for a job without
-- steps, or an unknown id.
--
-- Parameters:
--   job_id     the job's id
--   max_steps  at most this many rows, the first finished (default: all, <= 10000
--              steps and the wait)
-- Returns: (name, kind, result, attempt, at) per step: kind step (result: the
-- handler's), sleep ({"until": instant}), event (the payload received), timeout
-- (NULL), waiting ({"event": name, "deadline": instant}, the attempt that began it).
-- Errors:
--   22004 null_value_not_allowed  job_id or max_steps is NULL
--   22023 invalid_parameter_value max_steps below 1
-- Touches: reads brooq.job_step and brooq.job_wait.
create or replace function brooq.steps(job_id bigint, max_steps integer default 10001)
returns setof brooq.step
language plpgsql
stable
security definer
set search_path = pg_catalog, pg_temp
as $$
begin
    if steps.job_id is null or steps.max_steps is null then
        raise exception 'brooq.steps: job_id and max_steps must not be NULL'
            using errcode = 'null_value_not_allowed',
                  hint = 'Pass the id of the job whose steps you want; leave max_steps out for all of them.';
    end if;
    if steps.max_steps < 1 then
        raise exception 'brooq.steps: max_steps must be at least 1, not %', steps.max_steps
            using errcode = 'invalid_parameter_value',
                  hint = 'Pass how many steps to read, or leave max_steps out for all of them.';
    end if;
    return query
    select s.name, s.kind, s.result, s.attempt, s.at
      from (select s.name, s.kind, s.result, s.attempt, s.at, 0 as late
              from brooq.job_step s
             where s.job_id = steps.job_id
            union all
            select w.step, 'waiting', jsonb_build_object('event', w.event, 'deadline', w.deadline),
                   null::integer, w.since, 1
              from brooq.job_wait w
             where w.job_id = steps.job_id
               and not exists (select from brooq.job_step d where d.job_id = w.job_id and d.name = w.step)) as s
     order by s.late, s.at, s.name
     limit steps.max_steps;
end
$$;

comment on function brooq.steps(bigint, integer) is
'A job''s finished steps (step, sleep, event, timeout) with their results, and the wait it is in (waiting), in the order finished; the first max_steps only. Errors: 22004 NULL argument, 22023 max_steps below 1.';

revoke all on function brooq.steps(bigint, integer) from public;
grant execute on function brooq.steps(bigint, integer) to brooq_producer, brooq_worker;

-- brooq.sleep(worker, job_id, lease_token, step, until => NULL, duration => NULL)
--
-- A durable sleep of a job the caller holds: its end is fixed at the first call
-- for the step (until, or now + duration) and stored as the step (kind sleep); a
-- later call for the same step reads it back, whatever it passes. If the end has
-- come, the job goes on (state processing, nothing else changes). Else the attempt
-- ends without being spent: the job becomes pending with available_at = the end,
-- attempts - 1, lease released, lease_losses 0; its handler runs again from the top
-- after the end, and this call then answers processing.
--
-- Parameters:
--   worker, job_id, lease_token   the claim (as for settle)
--   step      the sleep's name, 1 to 200 characters, unique within the job
--   until     an instant (from 0001-01-02 to before 9999-12-31), or
--   duration  from now, no negative part, at most 100 years: exactly one of them
-- Returns: (state, until): processing (the sleep is over) or pending (released
-- until `until`); no row when the lease was lost.
-- Errors:
--   22004 null_value_not_allowed   worker, job_id, lease_token or step is NULL
--   22023 invalid_parameter_value  a bad step name, or one the job used for a step
--                                  or a wait; neither or both of until and duration,
--                                  or one out of range
--   54000 program_limit_exceeded   a job with 10,000 steps already
-- Touches: the job's row (locked), a row of brooq.job_step.
create or replace function brooq.sleep(
    worker text,
    job_id bigint,
    lease_token bigint,
    step text,
    until timestamptz default null,
    duration interval default null)
returns setof brooq.suspended
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_now timestamptz := brooq._now();
    v_step record;
    v_until timestamptz;
begin
    if sleep.worker is null or sleep.job_id is null or sleep.lease_token is null or sleep.step is null then
        raise exception 'brooq.sleep: worker, job_id, lease_token and step must not be NULL'
            using errcode = 'null_value_not_allowed',
                  hint = 'Pass the claim (worker, job id, lease_token), the sleep''s step name, and until or duration.';
    end if;
    if sleep.step = '' or length(sleep.step) > 200 then
        raise exception 'invalid step name "%"', left(sleep.step, 40)
            using errcode = 'invalid_parameter_value',
                  hint = 'Name a sleep with 1 to 200 characters, unique within the job, e.g. ''cool-off''.';
    end if;
    if (sleep.until is null) = (sleep.duration is null) then
        raise exception 'brooq.sleep: give until or duration, exactly one (until %, duration %)',
                coalesce(sleep.until::text, 'NULL'), coalesce(sleep.duration::text, 'NULL')
            using errcode = 'invalid_parameter_value',
                  hint = 'Use until for an instant, duration for a time from now, e.g. duration => ''1 hour''.';
    end if;
    if sleep.duration is not null and (not brooq._duration_ok(sleep.duration)
                                        or sleep.duration > interval '100 years') then
        raise exception 'invalid sleep duration %', sleep.duration
            using errcode = 'invalid_parameter_value',
                  hint = 'duration must be zero or positive in every part and at most 100 years, e.g. ''1 hour''.';
    end if;
    if sleep.until is not null and (not isfinite(sleep.until) or sleep.until < '0001-01-02 00:00:00+00'
                                     or sleep.until >= '9999-12-31 00:00:00+00') then
        raise exception 'invalid sleep until %', sleep.until
            using errcode = 'invalid_parameter_value',
                  hint = 'until must be an instant from 0001-01-02 to before 9999-12-31.';
    end if;
    perform from brooq.job j
     where j.id = sleep.job_id
       and j.state = 'processing'
       and j.locked_by = sleep.worker
       and j.lease_token = sleep.lease_token
       for no key update;
    if not found then
        return;  -- the lease was lost: nothing is written
    end if;
    select s.kind, s.result into v_step
      from brooq.job_step s
     where s.job_id = sleep.job_id and s.name = sleep.step;
    if found then
        if v_step.kind <> 'sleep' then
            raise exception 'step "%" of job % is a %, not a sleep', left(sleep.step, 40), sleep.job_id, v_step.kind
                using errcode = 'invalid_parameter_value',
                      hint = 'Give each step, sleep and wait of a handler a name of its own.';
        end if;
        v_until := (v_step.result ->> 'until')::timestamptz;
    else
        if (select count(*) from brooq.job_step s where s.job_id = sleep.job_id) >= 10000 then
            raise exception 'job % has 10000 steps already', sleep.job_id
                using errcode = 'program_limit_exceeded',
                      hint = 'Checkpoint at most 10000 steps per job: group small steps into one.';
        end if;
        v_until := coalesce(sleep.until, v_now + sleep.duration);
        insert into brooq.job_step (job_id, name, kind, result, attempt, at)
        select sleep.job_id, sleep.step, 'sleep', jsonb_build_object('until', v_until), j.attempts, v_now
          from brooq.job j where j.id = sleep.job_id;
    end if;
    if v_until <= v_now then
        return query select 'processing'::brooq.job_state, v_until;
        return;
    end if;
    update brooq.job j
       set state = 'pending',
           attempts = greatest(j.attempts - 1, 0),
           available_at = v_until,
           lease_losses = 0,
           locked_by = null,
           locked_until = null,
           updated_at = v_now
     where j.id = sleep.job_id;
    return query select 'pending'::brooq.job_state, v_until;
end
$$;

comment on function brooq.sleep(text, bigint, bigint, text, timestamptz, interval) is
'A durable sleep of a job the caller holds (fenced by worker and lease_token): its end fixed at the first call for the step; processing when it is over, else the job is pending until then, its attempt given back and its lease released; no row when the lease was lost. Errors: 22004 NULL argument, 22023 bad step name, until or duration, 54000 10000 steps.';

revoke all on function brooq.sleep(text, bigint, bigint, text, timestamptz, interval) from public;
grant execute on function brooq.sleep(text, bigint, bigint, text, timestamptz, interval) to brooq_worker;

-- brooq.wait_for_event(worker, job_id, lease_token, step, event, timeout)
--
-- The job the caller holds waits for the event `event` (brooq.emit_event), at most
-- `timeout` from the first call for the step. In order:
--   - the step is stored already: its answer again (received with the payload, or
--     timeout);
--   - a kept event of that name the job has not received yet (the earliest, by id,
--     emitted before or during the wait, within its keep: brooq.emit_event): stored
--     as the step (kind event) and received, the job goes on;
--   - the wait's deadline (fixed at the first call for the step) has passed:
--     stored as the step (kind timeout), timeout, the job goes on;
--   - else the job waits: the wait is registered (brooq.job_wait) and the attempt
--     ends without being spent, as a sleep's: pending until the deadline, attempts
--     - 1, lease released. An emit of the name makes it ready at once; so does this
--     call when an event it could not see at first committed meanwhile. Its handler
--     runs again from the top and this call then answers received or timeout.
-- A wait and an emit that commit at the same instant can each miss the other: the
-- next brooq.reap wakes the job (brooq._wake_missed), and whatever happens the event
-- is received at the deadline at the latest, while it is kept.
--
-- Parameters:
--   worker, job_id, lease_token   the claim (as for settle)
--   step     the wait's name, 1 to 200 characters, unique within the job
--   event    the event's name, 1 to 200 characters
--   timeout  > 0, no negative part, at most 100 years
-- Returns: (outcome, payload, until): received (payload), timeout, or waiting
-- (released until `until`); no row when the lease was lost.
-- Errors:
--   22004 null_value_not_allowed   a NULL argument
--   22023 invalid_parameter_value  a bad step or event name, a step name the job used
--                                  for a step or a sleep, a timeout out of range
--   54000 program_limit_exceeded   a job with 10,000 steps already
-- Touches: the job's row (locked), rows of brooq.job_step and brooq.job_wait.
create or replace function brooq.wait_for_event(
    worker text,
    job_id bigint,
    lease_token bigint,
    step text,
    event text,
    timeout interval)
returns setof brooq.awaited
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_now timestamptz := brooq._now();
    v_attempt integer;
    v_step record;
    v_event record;
    v_wait record;
    v_deadline timestamptz;
begin
    if wait_for_event.worker is null or wait_for_event.job_id is null or wait_for_event.lease_token is null
        or wait_for_event.step is null or wait_for_event.event is null or wait_for_event.timeout is null then
        raise exception 'brooq.wait_for_event: arguments must not be NULL'
            using errcode = 'null_value_not_allowed',
                  hint = 'Pass the claim (worker, job id, lease_token), the wait''s step name, the event''s name and a timeout.';
    end if;
    if wait_for_event.step = '' or length(wait_for_event.step) > 200 then
        raise exception 'invalid step name "%"', left(wait_for_event.step, 40)
            using errcode = 'invalid_parameter_value',
                  hint = 'Name a wait with 1 to 200 characters, unique within the job, e.g. ''payment''.';
    end if;
    if wait_for_event.event = '' or length(wait_for_event.event) > 200 then
        raise exception 'invalid event name "%"', left(wait_for_event.event, 40)
            using errcode = 'invalid_parameter_value',
                  hint = 'Name an event with 1 to 200 characters, e.g. ''payment-confirmed:order-42''.';
    end if;
    if wait_for_event.timeout <= interval '0' or not brooq._duration_ok(wait_for_event.timeout)
        or wait_for_event.timeout > interval '100 years' then
        raise exception 'invalid timeout %', wait_for_event.timeout
            using errcode = 'invalid_parameter_value',
                  hint = 'The timeout must be positive in every part and at most 100 years, e.g. ''1 day''.';
    end if;
    select j.attempts into v_attempt
      from brooq.job j
     where j.id = wait_for_event.job_id
       and j.state = 'processing'
       and j.locked_by = wait_for_event.worker
       and j.lease_token = wait_for_event.lease_token
       for no key update;
    if not found then
        return;  -- the lease was lost: nothing is written
    end if;
    select s.kind, s.result into v_step
      from brooq.job_step s
     where s.job_id = wait_for_event.job_id and s.name = wait_for_event.step;
    if found then
        if v_step.kind not in ('event', 'timeout') then
            raise exception 'step "%" of job % is a %, not a wait', left(wait_for_event.step, 40),
                    wait_for_event.job_id, v_step.kind
                using errcode = 'invalid_parameter_value',
                      hint = 'Give each step, sleep and wait of a handler a name of its own.';
        end if;
        return query select case v_step.kind when 'event' then 'received' else 'timeout' end, v_step.result,
                            null::timestamptz;
        return;
    end if;
    if (select count(*) from brooq.job_step s where s.job_id = wait_for_event.job_id) >= 10000 then
        raise exception 'job % has 10000 steps already', wait_for_event.job_id
            using errcode = 'program_limit_exceeded',
                  hint = 'Checkpoint at most 10000 steps per job: group small steps into one.';
    end if;
    -- the earliest kept event of the name this job has not received
    select e.id, e.payload into v_event
      from brooq.event e
     where e.name = wait_for_event.event
       and e.expires_at > v_now
       and not exists (select from brooq.job_step s where s.job_id = wait_for_event.job_id and s.event_id = e.id)
     order by e.id
     limit 1;
    select w.step, w.event, w.deadline into v_wait
      from brooq.job_wait w
     where w.job_id = wait_for_event.job_id;
    if v_event.id is not null or v_wait.step = wait_for_event.step and v_wait.deadline <= v_now then
        insert into brooq.job_step (job_id, name, kind, result, attempt, at, event_id)
        values (wait_for_event.job_id, wait_for_event.step,
                case when v_event.id is not null then 'event' else 'timeout' end,
                v_event.payload, v_attempt, v_now, v_event.id);
        delete from brooq.job_wait w where w.job_id = wait_for_event.job_id;
        return query select case when v_event.id is not null then 'received' else 'timeout' end,
                            v_event.payload, null::timestamptz;
        return;
    end if;
    -- wait: the deadline of the step's first call is kept
    v_deadline := case when v_wait.step = wait_for_event.step and v_wait.event = wait_for_event.event
                       then v_wait.deadline else v_now + wait_for_event.timeout end;
    insert into brooq.job_wait as w (job_id, step, event, since, deadline, xid)
    values (wait_for_event.job_id, wait_for_event.step, wait_for_event.event, v_now, v_deadline, pg_current_xact_id())
    on conflict on constraint job_wait_pkey do update
       set step = excluded.step, event = excluded.event, deadline = excluded.deadline, xid = excluded.xid,
           since = case when w.step = excluded.step then w.since else excluded.since end;
    -- an event committed since the look above: ready at once (its next claim receives it)
    if exists (select from brooq.event e
                where e.name = wait_for_event.event
                  and e.expires_at > v_now
                  and not exists (select from brooq.job_step s
                                   where s.job_id = wait_for_event.job_id and s.event_id = e.id)) then
        v_deadline := least(v_deadline, v_now);
    end if;
    update brooq.job j
       set state = 'pending',
           attempts = greatest(j.attempts - 1, 0),
           available_at = v_deadline,
           lease_losses = 0,
           locked_by = null,
           locked_until = null,
           updated_at = v_now
     where j.id = wait_for_event.job_id;
    return query select 'waiting', null::jsonb, v_deadline;
end
$$;

comment on function brooq.wait_for_event(text, bigint, bigint, text, text, interval) is
'The job the caller holds (fenced by worker and lease_token) waits for an event: received (a kept event it has not received, stored as the step), timeout (past the deadline of the step''s first call), or waiting (pending until the deadline or an emit, its attempt given back, its lease released); no row when the lease was lost. Errors: 22004 NULL argument, 22023 bad step or event name or timeout, 54000 10000 steps.';

revoke all on function brooq.wait_for_event(text, bigint, bigint, text, text, interval) from public;
grant execute on function brooq.wait_for_event(text, bigint, bigint, text, text, interval) to brooq_worker;
