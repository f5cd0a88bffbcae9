-- brooq.declare_topic(name, max_attempts, backoff_base, backoff_max, retention,
--                     max_payload_bytes, notify, max_lease, max_lease_losses,
--                     max_in_flight, rate, per, max_execution, retain_done,
--                     retain_payload) -> brooq.topic
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
--   max_lease          the longest lease claim may give and heartbeat renew;
--                      1 second to 7 days, no negative part (default 1 hour)
--   max_lease_losses   the poison-pill rule: a job whose lease is lost (reaped) this
--                      many times in a row, with no outcome written in between, is
--                      made dead by brooq.reap; 1 to 1000 (default 5)
--   max_in_flight      flow control: at most this many jobs of the topic processing
--                      at any moment, across all workers; 1 to 1000000, NULL (the
--                      default) = no limit. Lowered below the jobs in flight, it
--                      stops claims until they fall below it (none is taken back).
--   rate, per          flow control: at most `rate` jobs of the topic claimed in any
--                      window of length `per` (a sliding window, no burst above rate;
--                      see brooq.claim); rate 1 to 1000000, per 1 millisecond to
--                      1 day (default 1 second when rate is given); rate NULL (the
--                      default) = no rate limit, and then per must be NULL too
--   max_execution      the longest a job may take across all its attempts, counted
--                      from its first claim (waits between attempts included):
--                      claim and heartbeat bound the lease by it, a worker stops the
--                      attempt running when it runs out and records a failed
--                      attempt (so does reap for a lease that ran to it); a job
--                      past it fails each later attempt at once, and is dead only
--                      when its attempts are spent. 1 second to 100 years, no
--                      negative part; NULL (the default) = no limit. Read at each
--                      claim: a new value applies to jobs already queued.
--   retain_done        false: brooq.settle_many deletes a job in the very statement
--                      that settles it done (its idempotency key is free again at
--                      once); a job somebody waits on (brooq.watch) is kept, so the
--                      waiter reads its fate. dead and canceled jobs stay until the
--                      retention purges them. Default true.
--   retain_payload     false: a job's payload becomes 'null'::jsonb when it becomes
--                      terminal (done, dead or canceled: settle_many, cancel, reap's
--                      poison pill); state, attempts, last_error and result stay.
--                      Default true.
--
-- Returns: the topic row as stored.
-- Errors:
--   22004 null_value_not_allowed   a NULL argument
--   22023 invalid_parameter_value  a bad name or setting
-- Touches: inserts or updates one row of brooq.topic; inserts the topic's row of
-- brooq.flow_lock when it is missing.
--
-- brooq._write_topic(wanted brooq.topic) -> brooq.topic, private: checks a topic's
-- settings and stores them (declare_topic and alter_topic both write through it,
-- so both accept and refuse the same values with the same errors). A rate without
-- a per gets per '1 second'. Creates the topic (paused false) or updates its
-- settings; paused and created_at of an existing topic are kept.

-- 0.1.0's signature, without max_lease; and the ones of 0.2.0's development before
-- max_lease_losses, before the flow limits, before max_execution and before the
-- retention policies (never
-- released; harmless where they do not exist).
drop function if exists brooq.declare_topic(text, integer, interval, interval, interval, integer, boolean);
drop function if exists brooq.declare_topic(text, integer, interval, interval, interval, integer, boolean, interval);
drop function if exists brooq.declare_topic(text, integer, interval, interval, interval, integer, boolean, interval, integer);
drop function if exists brooq.declare_topic(text, integer, interval, interval, interval, integer, boolean, interval, integer, integer, integer, interval);
drop function if exists brooq.declare_topic(text, integer, interval, interval, interval, integer, boolean, interval, integer, integer, integer, interval, interval);

create or replace function brooq._write_topic(wanted brooq.topic)
returns brooq.topic
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
    v_now timestamptz := brooq._now();
    v brooq.topic := wanted;
begin
    if v.name !~ '^[a-z0-9._-]{1,128}$' then
        raise exception 'invalid topic name "%"', left(v.name, 200)
            using errcode = 'invalid_parameter_value',
                  detail = format('The name is %s characters long.', length(v.name)),
                  hint = 'Use 1 to 128 lowercase letters, digits, ".", "-" or "_".';
    end if;
    if v.max_attempts not between 1 and 1000 then
        raise exception 'invalid max_attempts % for topic "%"', v.max_attempts, v.name
            using errcode = 'invalid_parameter_value',
                  hint = 'max_attempts must be between 1 and 1000.';
    end if;
    if v.backoff_base <= interval '0' then
        raise exception 'invalid backoff_base % for topic "%"', v.backoff_base, v.name
            using errcode = 'invalid_parameter_value',
                  hint = 'backoff_base must be positive, e.g. ''1 second''.';
    end if;
    if v.backoff_max < v.backoff_base then
        raise exception 'invalid backoff_max % for topic "%": below backoff_base %',
                v.backoff_max, v.name, v.backoff_base
            using errcode = 'invalid_parameter_value',
                  hint = 'backoff_max must be at least backoff_base.';
    end if;
    if v.retention < interval '0' then
        raise exception 'invalid retention % for topic "%"', v.retention, v.name
            using errcode = 'invalid_parameter_value',
                  hint = 'retention must be zero (keep forever) or positive.';
    end if;
    if v.backoff_max > interval '100 years' or v.retention > interval '100 years' then
        raise exception 'invalid % % for topic "%": longer than 100 years',
                case when v.backoff_max > interval '100 years' then 'backoff_max' else 'retention' end,
                case when v.backoff_max > interval '100 years' then v.backoff_max
                     else v.retention end,
                v.name
            using errcode = 'invalid_parameter_value',
                  hint = 'Durations are at most 100 years; a retention of 0 keeps jobs forever.';
    end if;
    -- Intervals compare as if a month were 30 days, so '70000000 mons -2099999999 days'
    -- is "1 day" to the checks above, yet now + it overflows. Settle computes now +
    -- backoff, purge now - retention: those instants must exist. (Not a hot path.)
    begin
        perform v_now + v.backoff_base, v_now + v.backoff_max,
                v_now - v.retention;
    exception when datetime_field_overflow then
        raise exception 'invalid durations for topic "%": now + backoff or now - retention is out of range',
                v.name
            using errcode = 'invalid_parameter_value',
                  hint = 'Write durations without huge negative parts, e.g. ''90 days''.';
    end;
    if v.max_payload_bytes not between 1 and 268435455 then
        raise exception 'invalid max_payload_bytes % for topic "%"', v.max_payload_bytes, v.name
            using errcode = 'invalid_parameter_value',
                  hint = 'max_payload_bytes must be between 1 and 268435455 (256 MiB).';
    end if;

    if v.max_lease not between interval '1 second' and interval '7 days'
        or not brooq._duration_ok(v.max_lease) then
        raise exception 'invalid max_lease % for topic "%"', v.max_lease, v.name
            using errcode = 'invalid_parameter_value',
                  hint = 'max_lease must be between 1 second and 7 days, positive in every part, e.g. ''1 hour''.';
    end if;
    if v.max_lease_losses not between 1 and 1000 then
        raise exception 'invalid max_lease_losses % for topic "%"', v.max_lease_losses, v.name
            using errcode = 'invalid_parameter_value',
                  hint = 'max_lease_losses must be between 1 and 1000 (lease losses in a row before a job is dead).';
    end if;
    if v.max_in_flight not between 1 and 1000000 then
        raise exception 'invalid max_in_flight % for topic "%"', v.max_in_flight, v.name
            using errcode = 'invalid_parameter_value',
                  hint = 'max_in_flight must be between 1 and 1000000, or NULL for no limit.';
    end if;
    if v.rate not between 1 and 1000000 then
        raise exception 'invalid rate % for topic "%"', v.rate, v.name
            using errcode = 'invalid_parameter_value',
                  hint = 'rate must be between 1 and 1000000 claims per window, or NULL for no rate limit.';
    end if;
    if v.rate is null and v.per is not null then
        raise exception 'per % given without a rate for topic "%"', v.per, v.name
            using errcode = 'invalid_parameter_value',
                  hint = 'Give both, e.g. rate => 10, per => ''1 second'', or neither.';
    end if;
    if v.rate is not null then
        v.per := coalesce(v.per, interval '1 second');
        if v.per not between interval '1 millisecond' and interval '1 day' or not brooq._duration_ok(v.per) then
            raise exception 'invalid per % for topic "%"', v.per, v.name
                using errcode = 'invalid_parameter_value',
                      hint = 'per must be between 1 millisecond and 1 day, positive in every part, e.g. ''1 second''.';
        end if;
    end if;

    if v.max_execution not between interval '1 second' and interval '100 years'
        or not brooq._duration_ok(v.max_execution) then
        raise exception 'invalid max_execution % for topic "%"', v.max_execution, v.name
            using errcode = 'invalid_parameter_value',
                  hint = 'max_execution must be between 1 second and 100 years, positive in every part, e.g. ''10 minutes'', or NULL for no limit.';
    end if;

    insert into brooq.topic as t (name, max_attempts, backoff_base, backoff_max, retention,
                                  max_payload_bytes, notify, created_at, updated_at, max_lease,
                                  max_lease_losses, max_in_flight, rate, per, max_execution,
                                  retain_done, retain_payload)
    values (v.name, v.max_attempts, v.backoff_base, v.backoff_max, v.retention,
            v.max_payload_bytes, v.notify, v_now, v_now, v.max_lease, v.max_lease_losses,
            v.max_in_flight, v.rate, v.per, v.max_execution, v.retain_done, v.retain_payload)
    on conflict on constraint topic_pkey do update
        set max_attempts = excluded.max_attempts,
            backoff_base = excluded.backoff_base,
            backoff_max = excluded.backoff_max,
            retention = excluded.retention,
            max_payload_bytes = excluded.max_payload_bytes,
            notify = excluded.notify,
            max_lease = excluded.max_lease,
            max_lease_losses = excluded.max_lease_losses,
            max_in_flight = excluded.max_in_flight,
            rate = excluded.rate,
            per = excluded.per,
            max_execution = excluded.max_execution,
            retain_done = excluded.retain_done,
            retain_payload = excluded.retain_payload,
            updated_at = excluded.updated_at
    returning t.* into v;
    -- the row brooq.claim locks to count the topic's flow limits (brooq.flow_lock)
    insert into brooq.flow_lock (topic) values (v.name)
        on conflict on constraint flow_lock_pkey do nothing;
    return v;
end
$$;

comment on function brooq._write_topic(brooq.topic) is
'Private: check a topic''s settings and store them (the body of declare_topic and alter_topic). Errors: 22023 bad name or setting.';

revoke all on function brooq._write_topic(brooq.topic) from public;

create or replace function brooq.declare_topic(
    name text,
    max_attempts integer default 5,
    backoff_base interval default '1 second',
    backoff_max interval default '1 minute',
    retention interval default '30 days',
    max_payload_bytes integer default 1048576,
    notify boolean default true,
    max_lease interval default '1 hour',
    max_lease_losses integer default 5,
    max_in_flight integer default null,
    rate integer default null,
    per interval default null,
    max_execution interval default null,
    retain_done boolean default true,
    retain_payload boolean default true)
returns brooq.topic
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v brooq.topic;
begin
    if declare_topic.name is null or declare_topic.max_attempts is null
        or declare_topic.backoff_base is null or declare_topic.backoff_max is null
        or declare_topic.retention is null or declare_topic.max_payload_bytes is null
        or declare_topic.notify is null or declare_topic.max_lease is null
        or declare_topic.max_lease_losses is null or declare_topic.retain_done is null
        or declare_topic.retain_payload is null then
        raise exception 'brooq.declare_topic: arguments must not be NULL'
            using errcode = 'null_value_not_allowed',
                  hint = 'Leave an argument out to take its default.';
    end if;
    v.name := declare_topic.name;
    v.max_attempts := declare_topic.max_attempts;
    v.backoff_base := declare_topic.backoff_base;
    v.backoff_max := declare_topic.backoff_max;
    v.retention := declare_topic.retention;
    v.max_payload_bytes := declare_topic.max_payload_bytes;
    v.notify := declare_topic.notify;
    v.paused := false;
    v.max_lease := declare_topic.max_lease;
    v.max_lease_losses := declare_topic.max_lease_losses;
    v.max_in_flight := declare_topic.max_in_flight;
    v.rate := declare_topic.rate;
    v.per := declare_topic.per;
    v.max_execution := declare_topic.max_execution;
    v.retain_done := declare_topic.retain_done;
    v.retain_payload := declare_topic.retain_payload;
    return brooq._write_topic(v);
end
$$;

comment on function brooq.declare_topic(text, integer, interval, interval, interval, integer, boolean, interval, integer, integer, integer, interval, interval, boolean, boolean) is
'Create a topic or set all its settings (idempotent; omitted settings take their defaults). Flow limits: max_in_flight, rate per per (NULL = none); max_execution bounds a job''s time across all its attempts (NULL = none). Retention policies: retain_done => false deletes a job as it settles done, retain_payload => false clears a terminal job''s payload. Errors: 22004 NULL argument, 22023 bad name or setting.';

revoke all on function brooq.declare_topic(text, integer, interval, interval, interval, integer, boolean, interval, integer, integer, integer, interval, interval, boolean, boolean) from public;
grant execute on function brooq.declare_topic(text, integer, interval, interval, interval, integer, boolean, interval, integer, integer, integer, interval, interval, boolean, boolean) to brooq_admin;
