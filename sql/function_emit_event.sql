-- brooq.emit_event(name, payload, keep) -> setof brooq.emitted
--
-- Emits the event `name` with its payload, in the caller's transaction (a producer
-- emits it beside its own writes: both or neither). Every job waiting for the name
-- (brooq.wait_for_event) becomes ready now, and its topic's workers are notified
-- (NOTIFY brooq, as enqueue does, unless the topic has notify => false): its
-- handler runs again and receives the payload. The event is kept until now + keep,
-- so that a job that starts waiting for the name later still receives it (the
-- earliest kept event of the name it has not received); purge deletes it after.
-- Every waiter receives it: an event is a broadcast to the jobs that wait for its
-- name, not a message to one of them. Name events after what they are about
-- ('payment-confirmed:order-42'), so that only the jobs meant wait for them.
--
-- No lock it takes can stall a worker: it inserts its event, and locks only the
-- waiting jobs it makes ready (pending, no worker holds them), skipping those
-- another transaction holds (SKIP LOCKED: a claim of one at its deadline, another
-- emit of the name, an admin's cancel); a job it skipped is woken by the next
-- brooq.reap if it still waits (brooq._wake_missed). The payload reaches no claim:
-- a handler receives it from wait_for_event, one event at a time.
--
-- Parameters:
--   name     the event's name, 1 to 200 characters
--   payload  jsonb (default 'null'), at most 1 MiB (1,048,576 bytes of its JSON text)
--   keep     how long it is kept for jobs that start waiting later: 1 minute to
--            100 years, no negative part (default 1 day)
-- Returns: (id, woken): the event's id, and how many waiting jobs it made ready.
-- Errors:
--   22004 null_value_not_allowed   a NULL argument
--   22023 invalid_parameter_value  a name empty or longer than 200 characters; keep
--                                  out of range
--   54000 program_limit_exceeded   a payload above 1 MiB
-- Touches: inserts a row of brooq.event; updates the waiting jobs of the name
-- (available_at = now).
create type brooq.emitted as (
    id    bigint,
    woken integer
);

comment on type brooq.emitted is
'Result of emit_event: the event''s id, and how many waiting jobs it made ready.';

create or replace function brooq.emit_event(name text, payload jsonb default 'null', keep interval default '1 day')
returns setof brooq.emitted
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_now timestamptz := brooq._now();
    v_bytes integer;
    v_id bigint;
    v_woken integer;
    v_topics text[];
begin
    if emit_event.name is null or emit_event.payload is null or emit_event.keep is null then
        raise exception 'brooq.emit_event: name, payload and keep must not be NULL'
            using errcode = 'null_value_not_allowed',
                  hint = 'Pass the event''s name; leave payload out for JSON null and keep for 1 day.';
    end if;
    if emit_event.name = '' or length(emit_event.name) > 200 then
        raise exception 'invalid event name "%"', left(emit_event.name, 40)
            using errcode = 'invalid_parameter_value',
                  hint = 'Name an event with 1 to 200 characters, e.g. ''payment-confirmed:order-42''.';
    end if;
    if emit_event.keep < interval '1 minute' or not brooq._duration_ok(emit_event.keep)
        or emit_event.keep > interval '100 years' then
        raise exception 'invalid keep %', emit_event.keep
            using errcode = 'invalid_parameter_value',
                  hint = 'Keep an event from 1 minute to 100 years, no part negative, e.g. ''1 day''.';
    end if;
    v_bytes := octet_length(emit_event.payload::text);
    if v_bytes > 1048576 then
        raise exception 'payload of event "%" is % bytes, larger than the 1048576 bytes allowed',
                left(emit_event.name, 40), v_bytes
            using errcode = 'program_limit_exceeded',
                  hint = 'Emit a reference (an id the handler looks up), not the data.';
    end if;
    insert into brooq.event (name, payload, emitted_at, expires_at, emitted_by, xid)
    values (emit_event.name, emit_event.payload, v_now, v_now + emit_event.keep, session_user, pg_current_xact_id())
    returning id into v_id;
    -- the waiters of the name: ready now (SKIP LOCKED: see the header)
    with ready as (
        update brooq.job j
           set available_at = v_now,
               updated_at = v_now
         where j.id in (select k.id
                          from brooq.job_wait w
                          join brooq.job k on k.id = w.job_id
                         where w.event = emit_event.name
                           and k.state = 'pending'
                           and k.available_at > v_now
                           for no key update of k skip locked)
        returning j.topic
    )
    select count(*), array_agg(distinct r.topic) into v_woken, v_topics from ready r;
    if v_woken > 0 then
        perform pg_notify('brooq', t.name) from brooq.topic t where t.name = any(v_topics) and t.notify;
    end if;
    return query select v_id, v_woken;
end
$$;

comment on function brooq.emit_event(text, jsonb, interval) is
'Emit an event in the caller''s transaction: the jobs waiting for its name become ready (SKIP LOCKED, the rest woken by reap) and it is kept for keep (default 1 day) for jobs that wait later. Errors: 22004 NULL argument, 22023 bad name or keep, 54000 a payload above 1 MiB.';

revoke all on function brooq.emit_event(text, jsonb, interval) from public;
grant execute on function brooq.emit_event(text, jsonb, interval) to brooq_producer;

-- brooq._wake_missed() -> integer, the jobs it made ready
--
-- A wait and an emit of its name that commit at the same time may each miss the
-- other (each looked before the other committed). Every pair that neither matched
-- has one side from a transaction that had not ended when the previous sweep took
-- its snapshot, so its xid is at or above the cursor that sweep left in
-- brooq.event_sweep (the oldest transaction still running then, xmin). The sweep
-- matches the waits of such transactions against every kept event, and the events of
-- such transactions against every wait, wakes the matched jobs still waiting (SKIP
-- LOCKED), and moves the cursor to the xmin of a snapshot taken before it matched,
-- unless it skipped a job (kept for the next sweep). One sweeper at a time (the
-- cursor's row, SKIP LOCKED); brooq.reap calls it when some job waits.
-- Touches: the cursor's row; updates the jobs it wakes (available_at = now).
create or replace function brooq._wake_missed()
returns integer
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
    v_now timestamptz := brooq._now();
    v_from xid8;
    v_next xid8;
    v_ids bigint[];
    v_woken integer;
    v_topics text[];
begin
    select s.swept_to into v_from from brooq.event_sweep s for update skip locked;
    if not found then
        insert into brooq.event_sweep (only_row) values (true) on conflict on constraint event_sweep_pkey do nothing;
        return 0;  -- another sweeper runs now
    end if;
    -- every transaction below it has ended before the statements below start
    v_next := pg_snapshot_xmin(pg_current_snapshot());
    select array_agg(distinct c.job_id) into v_ids
      from (select w.job_id, w.event
              from brooq.job_wait w
             where w.xid >= v_from
               and exists (select from brooq.event e
                            where e.name = w.event and e.expires_at > v_now
                              and not exists (select from brooq.job_step s
                                               where s.job_id = w.job_id and s.event_id = e.id))
            union
            select w.job_id, w.event
              from brooq.event e
              join brooq.job_wait w on w.event = e.name
             where e.xid >= v_from
               and e.expires_at > v_now
               and not exists (select from brooq.job_step s where s.job_id = w.job_id and s.event_id = e.id)) as c
      join brooq.job j on j.id = c.job_id
     where j.state = 'pending' and j.available_at > v_now;
    if v_ids is not null then
        with ready as (
            update brooq.job j
               set available_at = v_now,
                   updated_at = v_now
             where j.id in (select k.id from brooq.job k
                             where k.id = any(v_ids) and k.state = 'pending' and k.available_at > v_now
                               for no key update skip locked)
            returning j.topic
        )
        select count(*), array_agg(distinct r.topic) into v_woken, v_topics from ready r;
        perform pg_notify('brooq', t.name) from brooq.topic t where t.name = any(v_topics) and t.notify;
        if exists (select from brooq.job k
                    where k.id = any(v_ids) and k.state = 'pending' and k.available_at > v_now) then
            return v_woken;  -- a job skipped: the cursor stays, the next sweep tries again
        end if;
    end if;
    update brooq.event_sweep s set swept_to = v_next where s.only_row;
    return coalesce(v_woken, 0);
end
$$;

comment on function brooq._wake_missed() is
'Private: wake the jobs whose wait and the emit of its event committed at the same time and missed each other (brooq.reap runs it). Errors: none.';

revoke all on function brooq._wake_missed() from public;
