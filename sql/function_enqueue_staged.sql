-- brooq.enqueue_staged(call_id, topic, payloads, idempotency_keys, available_at,
--                      priority, delay, group_keys, trace_context)
--   -> setof brooq.enqueued, one row per payload, in input order
-- brooq.decide_staged(call_id, decision) -> text, the call's state here after it
-- brooq.forget_staged(keep, open_calls) -> integer, rows forgotten
--
-- This partition's share of a bulk enqueue that a PL/Proxy router (proxy/,
-- docs/scale-out.md) split over several partitions. The router stages every share
-- (enqueue_staged, each partition in its own transaction), then publishes every
-- share (decide_staged 'publish') once all are staged, or discards them
-- (decide_staged 'discard') when one failed: either every job of the call becomes
-- claimable or none ever runs. A router that dies between the steps leaves the call
-- to brooq_proxy.resolve(), which fences the call on every partition ('fence': a
-- plain publish is then refused) and publishes it everywhere ('force') when any
-- partition already published it, else discards it everywhere.
--
-- A staged job is an ordinary pending job whose available_at is the marker
-- 9999-12-30 00:00:00+00, which no claim reaches: claim is unchanged. Publishing sets
-- its available_at to the instant enqueue_staged computed (available_at, now +
-- delay, or now) and wakes the topic's listeners; discarding deletes it. Until then
-- it counts as scheduled in brooq.topic_stats and holds its idempotency key and
-- its place in its ordered group.
--
-- enqueue_staged: brooq.enqueue_many's arguments and rules (and errors), after a
--   call id the router draws at random. Refused when the call id is known here
--   already (a resolver fenced it before this share arrived), and when a key of the
--   batch belongs to another call's job that is not published yet (that call may
--   still be discarded: the caller retries once it is decided).
-- decide_staged:
--   'publish'  staged -> published; fenced or discarded: refused (returns that state)
--   'force'    staged or fenced -> published; discarded: refused
--   'fence'    staged -> fenced; no row -> a discarded tombstone
--   'discard'  staged or fenced -> discarded (the jobs deleted); published: refused;
--              no row -> a discarded tombstone
--   Returns the state after the decision, or 'absent' (publish, force: no row).
--   A staged job canceled meanwhile stays canceled.
-- forget_staged: deletes the published and discarded rows decided more than keep
--   ago, but those of open_calls (calls a resolver found still staged or fenced on
--   some partition).
-- Errors:
--   22004 null_value_not_allowed   a NULL call_id, decision, keep; enqueue_many's
--   22023 invalid_parameter_value  an unknown decision; keep negative or over 100
--                                  years; enqueue_many's
--   40001 serialization_failure    enqueue_staged: the call id is known here already
--   55P03 lock_not_available       enqueue_staged: a key of the batch belongs to a job
--                                  of another call not yet published (enqueue_many's
--                                  check, as for every bulk enqueue)
--   42704, 54000                   enqueue_staged: enqueue_many's
-- Touches: brooq.staged_call (one row per call); brooq.job: enqueue_staged inserts
-- (as enqueue_many), publish updates available_at, discard deletes.
create or replace function brooq.enqueue_staged(
    call_id uuid,
    topic text,
    payloads jsonb[],
    idempotency_keys text[] default null,
    available_at timestamptz default null,
    priority integer default 0,
    delay interval default null,
    group_keys text[] default null,
    trace_context jsonb default null)
returns setof brooq.enqueued
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_now timestamptz := brooq._now();
    v_at timestamptz;
    v_ids bigint[];
    v_new boolean[];
begin
    if enqueue_staged.call_id is null then
        raise exception 'brooq.enqueue_staged: call_id must not be NULL'
            using errcode = 'null_value_not_allowed',
                  hint = 'Pass the random call id the router drew for this bulk enqueue.';
    end if;
    v_at := brooq._available_at(v_now, enqueue_staged.available_at, enqueue_staged.delay);
    select array_agg(e.id order by e.n), array_agg(e.created order by e.n)
      into v_ids, v_new
      from brooq.enqueue_many(enqueue_staged.topic, enqueue_staged.payloads, enqueue_staged.idempotency_keys,
                              '9999-12-30 00:00:00+00'::timestamptz, enqueue_staged.priority, null,
                              enqueue_staged.group_keys, enqueue_staged.trace_context)
           with ordinality as e(id, created, n);
    -- The call's row, last: a resolver's fence of the same id (an insert too) either
    -- came first, and this share is refused, or waits for this transaction.
    insert into brooq.staged_call as s (call_id, state, topic, job_ids, available_at, staged_at)
    values (enqueue_staged.call_id, 'staged', enqueue_staged.topic,
            array(select u.id from unnest(v_ids, v_new) as u(id, created) where u.created), v_at, v_now)
    on conflict on constraint staged_call_pkey do nothing;
    if not found then
        raise exception 'bulk enqueue % is known here already: it was abandoned', enqueue_staged.call_id
            using errcode = 'serialization_failure',
                  hint = 'Enqueue the batch again: no job of that call runs.';
    end if;
    return query
    select u.id, u.created from unnest(v_ids, v_new) with ordinality as u(id, created, n) order by u.n;
end
$$;

comment on function brooq.enqueue_staged(uuid, text, jsonb[], text[], timestamptz, integer, interval, text[], jsonb) is
'A router''s bulk enqueue, this partition''s share: brooq.enqueue_many''s jobs, unclaimable until brooq.decide_staged publishes them; returns (id, created) per payload in input order. Errors: 22004, 42704, 54000, 22023 (as enqueue_many), 40001 (the call id is known here already), 55P03 (a key held by another call not yet published, or held too long).';

create or replace function brooq.decide_staged(call_id uuid, decision text)
returns text
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_now timestamptz := brooq._now();
    v_call brooq.staged_call;
    v_notify boolean;
begin
    if decide_staged.call_id is null or decide_staged.decision is null then
        raise exception 'brooq.decide_staged: call_id and decision must not be NULL'
            using errcode = 'null_value_not_allowed',
                  hint = 'Pass a call id and one of publish, force, fence, discard.';
    end if;
    if decide_staged.decision not in ('publish', 'force', 'fence', 'discard') then
        raise exception 'unknown decision "%"', left(decide_staged.decision, 40)
            using errcode = 'invalid_parameter_value',
                  hint = 'A decision is publish, force, fence or discard.';
    end if;
    if decide_staged.decision in ('fence', 'discard') then
        -- A call that never staged here gets a tombstone: its share, if it arrives
        -- late, is refused (brooq.enqueue_staged).
        insert into brooq.staged_call (call_id, state, staged_at, decided_at)
        values (decide_staged.call_id, 'discarded', v_now, v_now)
        on conflict on constraint staged_call_pkey do nothing;
        if found then
            return 'discarded';
        end if;
    end if;
    select s.* into v_call from brooq.staged_call s where s.call_id = decide_staged.call_id for update;
    if not found then
        return 'absent';
    end if;
    if v_call.state = 'published' or v_call.state = 'discarded'
        or (decide_staged.decision = 'publish' and v_call.state = 'fenced')
        or (decide_staged.decision = 'fence' and v_call.state = 'fenced') then
        return v_call.state;
    end if;
    if decide_staged.decision = 'fence' then
        update brooq.staged_call s set state = 'fenced', decided_at = v_now where s.call_id = decide_staged.call_id;
        return 'fenced';
    elsif decide_staged.decision = 'discard' then
        delete from brooq.job j
         where j.id = any(v_call.job_ids) and j.state = 'pending'
           and j.available_at = '9999-12-30 00:00:00+00'::timestamptz;
        update brooq.staged_call s set state = 'discarded', decided_at = v_now, job_ids = null
         where s.call_id = decide_staged.call_id;
        return 'discarded';
    end if;
    -- publish, or force
    update brooq.job j set available_at = v_call.available_at
     where j.id = any(v_call.job_ids) and j.state = 'pending'
       and j.available_at = '9999-12-30 00:00:00+00'::timestamptz;
    update brooq.staged_call s set state = 'published', decided_at = v_now, job_ids = null
     where s.call_id = decide_staged.call_id;
    select t.notify into v_notify from brooq.topic t where t.name = v_call.topic;
    if v_notify and cardinality(v_call.job_ids) > 0 and v_call.available_at <= v_now then
        perform pg_notify('brooq', v_call.topic);
    end if;
    return 'published';
end
$$;

comment on function brooq.decide_staged(uuid, text) is
'A router''s decision on a bulk enqueue staged here: publish, force, fence or discard (see brooq.enqueue_staged); returns the call''s state here after it (published, fenced, discarded) or absent. Errors: 22004 NULL argument, 22023 unknown decision.';

create or replace function brooq.forget_staged(keep interval, open_calls uuid[] default '{}')
returns integer
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_n integer;
begin
    if forget_staged.keep is null then
        raise exception 'brooq.forget_staged: keep must not be NULL'
            using errcode = 'null_value_not_allowed',
                  hint = 'Pass how long decided calls are kept, e.g. ''1 hour''.';
    end if;
    if not brooq._duration_ok(forget_staged.keep) or forget_staged.keep > interval '100 years' then
        raise exception 'invalid keep %', forget_staged.keep
            using errcode = 'invalid_parameter_value',
                  hint = 'keep is a duration with no negative part, at most 100 years.';
    end if;
    delete from brooq.staged_call s
     where s.state in ('published', 'discarded')
       and s.decided_at < brooq._now() - forget_staged.keep
       and s.call_id <> all(coalesce(forget_staged.open_calls, '{}'));
    get diagnostics v_n = row_count;
    return v_n;
end
$$;

comment on function brooq.forget_staged(interval, uuid[]) is
'A router resolver''s cleanup: deletes the published and discarded calls decided more than keep ago, but open_calls. Returns how many. Errors: 22004 NULL keep, 22023 a bad keep.';

revoke all on function brooq.enqueue_staged(uuid, text, jsonb[], text[], timestamptz, integer, interval, text[], jsonb) from public;
revoke all on function brooq.decide_staged(uuid, text) from public;
revoke all on function brooq.forget_staged(interval, uuid[]) from public;
grant execute on function brooq.enqueue_staged(uuid, text, jsonb[], text[], timestamptz, integer, interval, text[], jsonb),
                          brooq.decide_staged(uuid, text)
   to brooq_producer;
grant execute on function brooq.forget_staged(interval, uuid[]) to brooq_admin;
