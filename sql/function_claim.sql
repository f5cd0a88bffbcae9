-- brooq.claim(worker, topics, max_jobs, lease) -> setof brooq.claimed_job
--
-- Takes up to max_jobs ready jobs for `worker`, in one statement (one of two,
-- for one topic or several): ready means
-- state pending or failed, available_at <= now, topic not paused. Order: higher
-- priority first, then earlier available_at, then lower id; rows locked by
-- another claimer are skipped (FOR NO KEY UPDATE SKIP LOCKED), so concurrent
-- claimers never wait for each other and never get the same job. Each claimed job
-- becomes processing, attempts + 1 (an attempt is charged at claim), locked_by =
-- worker, locked_until = now + lease, and lease_token = a random 64-bit number
-- drawn for this call (gen_random_uuid's strong randomness): settle and heartbeat
-- need it back, and no view shows it, so another worker cannot guess it.
--
-- max_execution: every claim sets first_claimed_at on a job's first
-- claim and keeps it after; for a topic with a max_execution, the job's execution
-- deadline is first_claimed_at + max_execution (the topic's value at this claim),
-- and the lease ends no later than it: locked_until = least(now + lease,
-- greatest(deadline, now)). Each claimed job carries execution_deadline and
-- execution_left = greatest(deadline - now, 0) (both NULL without max_execution):
-- a worker bounds the attempt by execution_left. A job already past its deadline
-- is claimed all the same (its attempt is charged: invariant 6, docs/architecture.md)
-- with execution_left 0 and a lease that ends at the claim: the worker settles it
-- failed without running the handler, or, if it does not, the next reap records
-- that failure.
--
-- Claim does not take over expired leases: brooq.reap returns them to pending
-- (the Python worker reaps every lease/2, pg_cron can too).
--
-- At most one job that lost its lease since its last outcome (lease_losses > 0)
-- per call, whatever the number of topics: when a poison pill kills its worker
-- process, the jobs claimed with it die too and are reaped with it, all ready at
-- the same instant; claimed together again, they would die together again and
-- reach max_lease_losses with it. Taken one per claim, they part ways.
-- (job_suspect_idx finds them; it is empty on a healthy queue.)
--
-- Flow control: a topic declared with max_in_flight or rate (see
-- brooq.declare_topic) is claimed under a lock of its own: the topic's row of
-- brooq.flow_lock, locked FOR UPDATE (taken in name order, so claims of several
-- topics cannot deadlock) and held until the claim's transaction ends. Only
-- brooq's owner may lock that row (not an advisory lock, which any login could
-- take and hold; see brooq.flow_lock). Under it, in statements that start after
-- the lock is granted (so they see every claim of the topic that committed
-- before), claim counts the topic's jobs
-- processing and its claims in the current window, and takes at most
--   least(max_jobs, max_in_flight - processing, rate - claims in (t - per, t])
-- jobs of the topic. Only claim makes a job processing, so counting under the lock
-- cannot let max_in_flight be passed whatever reap, settle and cancel do at the same
-- time (they only lower the count). Topics without limits take no lock and keep
-- the plain SKIP LOCKED statement.
-- The rate model is a sliding log (brooq.claim_window): each claim that took jobs
-- of the topic is written with its instant t and its count; a claim at t may take
-- rate minus the jobs claimed in (t - per, t]. So at most `rate` jobs are claimed in
-- any window of length per, with no burst above it: a full rate may be claimed at
-- once, then nothing until the oldest claims leave the window. t is the clock read
-- under the lock, once the lock is granted (not the call's start: a claim that waited
-- for the lock takes its jobs after the claims it waited for committed, and must be
-- counted then, not from the past), or the latest instant already written when that
-- is later (the clock stepped back). The trim keeps the latest claim written, even
-- out of the window, so that floor survives a claim that empties the window and
-- takes nothing. So the instants written never go back, each claim is counted no
-- earlier than it took its jobs, and (t - per, t] holds every claim it must.
-- Flow-limited topics need READ COMMITTED (a snapshot taken before the lock would
-- not see the claims it waited for): in another isolation level, claim refuses them.
--
-- Ordered groups: a job enqueued with a group_key is ready only when no
-- earlier job of its (topic, group_key) is active: waiting for its parents
-- (workflows), pending, failed (waiting for a retry) or processing (job_group_idx,
-- one probe per grouped candidate). A job's parents exist before it, so a parent
-- in its own group always comes earlier: a waiting job never holds its parent back. So the
-- jobs of a group run one at a time, in group_seq order (the order their enqueues
-- committed), whatever their priority and available_at: a later job waits for the
-- first one even if it has a higher priority or became available earlier; a
-- failed job waiting for its retry holds its group; done, dead and canceled free
-- it. A claim takes at most one job per group. enqueue draws group_seq under a row
-- lock of brooq.job_group held to its commit, so a job a snapshot cannot see yet
-- always comes after the ones it can: the snapshot alone decides safely (a claim
-- racing another for the same group finds the head locked and skips it, and sees
-- the head as active, so never takes the next job). Cost: claim's scan of
-- job_ready_idx passes over the ready jobs of blocked groups that come first in
-- claim order, one probe each.
--
-- Parameters:
--   worker    a non-empty name for the caller, unique per worker process
--   topics    the topics to take jobs from (unknown ones are an error)
--   max_jobs  1 to 10000
--   lease     how long the jobs are held without a heartbeat; > 0, no negative
--             part, at most the max_lease of every topic named (default 1 hour)
--
-- Returns: the claimed jobs (zero rows when nothing is ready), in no set order, each
-- with the trace context it was enqueued under (trace_context, NULL: none) and, for
-- a job with parents (workflows), parents: their ids, topics and states as a JSON
-- array, never their results (brooq._job_parents; NULL for a job without parents,
-- which costs it nothing).
-- Errors:
--   22004 null_value_not_allowed   a NULL argument
--   22023 invalid_parameter_value  empty worker or topics (or more than one dimension),
--                                  max_jobs or lease out of range
--   42704 undefined_object         a topic was never declared
--   25000 invalid_transaction_state  a flow-limited topic claimed in a transaction
--                                  that is not READ COMMITTED
-- Touches: updates up to max_jobs rows of brooq.job; for flow-limited topics,
-- locks their rows of brooq.flow_lock; for rate-limited topics, trims and appends
-- to brooq.claim_window.
create or replace function brooq.claim(
    worker text,
    topics text[],
    max_jobs integer default 1,
    lease interval default '30 seconds')
returns setof brooq.claimed_job
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
set plan_cache_mode = force_generic_plan  -- see docs/performance.md, "Generic plans"
set enable_seqscan = off  -- a generic plan made on a near-empty table must still probe indexes
set jit = off  -- a generic plan's estimates can pass jit_above_cost: 44-82 ms of compiling per call
as $$
declare
    v_now timestamptz := brooq._now();
    v_active text[];
    v_unknown text;
    v_max_lease interval;
    v_token bigint;
    v_flow text[];            -- the active topics with a flow limit
    v_caps integer[];         -- per active topic, the most jobs this call may take of it
    v_rated text[] := '{}';   -- the active topics with a rate limit ...
    v_rated_at timestamptz[] := '{}';  -- ... and the instant their claims are counted at
    v_execs interval[];       -- per active topic, its max_execution (NULL: none)
    v_limits record;
    v_n bigint;
    v_at timestamptz;
    v_last timestamptz;
    -- several topics: the rows locked so far (id, topic, priority, available_at) ...
    v_cand_id bigint[] := '{}';
    v_cand_topic text[] := '{}';
    v_cand_priority integer[] := '{}';
    v_cand_at timestamptz[] := '{}';
    v_open text[];            -- ... the topics whose heads may hold more of the first max_jobs,
    v_want integer[];         -- how many rows of each of their heads the next round locks,
    v_open_caps integer[];    -- and their caps
begin
    if claim.worker is null or claim.topics is null or claim.max_jobs is null or claim.lease is null then
        raise exception 'brooq.claim: arguments must not be NULL'
            using errcode = 'null_value_not_allowed',
                  hint = 'Pass a worker name and an array of topics; leave max_jobs and lease out for their defaults.';
    end if;
    if claim.worker = '' or length(claim.worker) > 200 then
        raise exception 'invalid worker name "%"', left(claim.worker, 40)
            using errcode = 'invalid_parameter_value',
                  hint = 'Name the worker with 1 to 200 characters, e.g. host:pid.';
    end if;
    if claim.max_jobs not between 1 and 10000 then
        raise exception 'invalid max_jobs %', claim.max_jobs
            using errcode = 'invalid_parameter_value',
                  hint = 'max_jobs must be between 1 and 10000.';
    end if;
    if claim.lease <= interval '0' or not brooq._duration_ok(claim.lease) then
        raise exception 'invalid lease %', claim.lease
            using errcode = 'invalid_parameter_value',
                  hint = 'The lease must be positive in every part, e.g. ''30 seconds''.';
    end if;
    if cardinality(claim.topics) = 0 or array_ndims(claim.topics) > 1
        or array_position(claim.topics, null) is not null then
        raise exception 'brooq.claim: topics must be a one-dimensional, non-empty array without NULLs, not %',
                left(claim.topics::text, 100)
            using errcode = 'invalid_parameter_value',
                  hint = 'Pass the topics this worker handles, e.g. array[''email''].';
    end if;
    -- v_active and v_execs in one order (by name): each topic's max_execution beside it
    select array_agg(t.name order by t.name) filter (where not t.paused),
           min(q.name) filter (where t.name is null),
           min(t.max_lease),
           array_agg(t.name order by t.name) filter (where not t.paused
                                                     and (t.max_in_flight is not null or t.rate is not null)),
           array_agg(t.max_execution order by t.name) filter (where not t.paused)
      into v_active, v_unknown, v_max_lease, v_flow, v_execs
      from (select distinct u.name from unnest(claim.topics) as u(name)) as q
      left join brooq.topic t on t.name = q.name;
    if v_unknown is not null then
        raise exception 'cannot claim from topic "%": it does not exist', left(v_unknown, 200)
            using errcode = 'undefined_object',
                  hint = 'Declare it first with brooq.declare_topic(name => ...).';
    end if;
    if claim.lease > v_max_lease then
        raise exception 'lease % is longer than %, the max_lease of the topics claimed from', claim.lease, v_max_lease
            using errcode = 'invalid_parameter_value',
                  hint = 'Claim with a shorter lease and renew it with brooq.heartbeat, or raise max_lease with brooq.declare_topic.';
    end if;
    if v_active is null then
        return;  -- every topic named is paused
    end if;
    v_token := ('x' || encode(substr(uuid_send(gen_random_uuid()), 1, 8), 'hex'))::bit(64)::bigint;

    if v_flow is not null then
        -- Flow control (see the header): lock, then count in fresh snapshots.
        if current_setting('transaction_isolation') <> 'read committed' then
            raise exception 'cannot claim from flow-limited topic "%" in a % transaction', v_flow[1],
                    upper(current_setting('transaction_isolation'))
                using errcode = 'invalid_transaction_state',
                      hint = 'Claim in a READ COMMITTED transaction (the default), e.g. in autocommit.';
        end if;
        -- v_flow is in name order, and so are the locks
        select count(*) into v_n
          from (select from brooq.flow_lock l where l.topic = any(v_flow) order by l.topic for update) as l;
        if v_n < cardinality(v_flow) then
            -- a topic row written without declare_topic has no lock row yet: add it
            insert into brooq.flow_lock (topic) select f.name from unnest(v_flow) as f(name) order by 1
                on conflict on constraint flow_lock_pkey do nothing;
            perform from brooq.flow_lock l where l.topic = any(v_flow) order by l.topic for update;
        end if;
        v_caps := array_fill(claim.max_jobs, array[cardinality(v_active)]);
        for i in 1 .. cardinality(v_active) loop
            select t.max_in_flight, t.rate, t.per into v_limits from brooq.topic t where t.name = v_active[i];
            if v_limits.max_in_flight is not null then
                -- read at most max_in_flight of them: the cost is bounded by the limit
                select count(*) into v_n
                  from (select from brooq.job j
                         where j.locked_until is not null and j.state = 'processing'
                           and j.topic = v_active[i]
                         limit v_limits.max_in_flight) as f;
                v_caps[i] := least(v_caps[i], greatest(v_limits.max_in_flight - v_n, 0));
            end if;
            if v_limits.rate is not null then
                -- the instant: the clock read now, under the lock (not v_now, read before
                -- the wait), and never before the latest claim written (see the header)
                select max(w.claimed_at) into v_last
                  from brooq.claim_window w where w.topic = v_active[i];
                v_at := greatest(brooq._now(), v_last);
                -- trim what left the window, except the latest claim, whatever its age
                delete from brooq.claim_window w
                 where w.topic = v_active[i] and w.claimed_at <= v_at - v_limits.per
                   and w.claimed_at < v_last;
                select coalesce(sum(w.jobs), 0) into v_n
                  from brooq.claim_window w
                 where w.topic = v_active[i] and w.claimed_at > v_at - v_limits.per;
                v_caps[i] := least(v_caps[i], greatest(v_limits.rate - v_n, 0));
                v_rated := v_rated || v_active[i];
                v_rated_at := v_rated_at || v_at;
            end if;
        end loop;
        if (select coalesce(max(c), 0) from unnest(v_caps) as c) = 0 then
            return;  -- every topic is at its limit
        end if;
    end if;

    if cardinality(v_active) = 1 then
        -- One topic (the common case): an ordered scan of job_ready_idx, no sort.
        -- Kept apart from the merged form below, which serves one topic too but
        -- measured twice as slow for it (claim of 100: 2.7 ms against 1.3 ms).
        return query
        with fresh as (
            select j.id, j.priority, j.available_at
              from brooq.job j
             where j.state in ('pending', 'failed')
               and j.topic = v_active[1]
               and j.available_at <= v_now
               and j.lease_losses = 0
               and (j.group_key is null or not exists (
                       -- an ordered group: only its first active job (see the header)
                       select from brooq.job k
                        where k.topic = j.topic and k.group_key = j.group_key and k.group_key is not null
                          and k.state in ('waiting', 'pending', 'failed', 'processing') and k.group_seq < j.group_seq))
             order by j.priority desc, j.available_at, j.id
             limit coalesce(v_caps[1], claim.max_jobs)
               for no key update skip locked
        ), suspect as (
            -- at most one job that lost its lease (see the header): job_suspect_idx
            select j.id, j.priority, j.available_at
              from brooq.job j
             where j.state in ('pending', 'failed')
               and j.topic = v_active[1]
               and j.available_at <= v_now
               and j.lease_losses > 0
               and (j.group_key is null or not exists (
                       -- an ordered group: only its first active job (see the header)
                       select from brooq.job k
                        where k.topic = j.topic and k.group_key = j.group_key and k.group_key is not null
                          and k.state in ('waiting', 'pending', 'failed', 'processing') and k.group_seq < j.group_seq))
             order by j.priority desc, j.available_at, j.id
             limit least(coalesce(v_caps[1], 1), 1)
               for no key update skip locked
        ), ready as (
            select r.id
              from (select * from fresh union all select * from suspect) as r
             order by r.priority desc, r.available_at, r.id
             limit coalesce(v_caps[1], claim.max_jobs)
        )
        update brooq.job j
           set state = 'processing',
               attempts = j.attempts + 1,
               lease_token = v_token,
               locked_by = claim.worker,
               -- least() skips NULL: without max_execution, now + lease
               locked_until = least(v_now + claim.lease,
                                    case when v_execs[1] is not null
                                         then greatest(coalesce(j.first_claimed_at, v_now) + v_execs[1], v_now) end),
               first_claimed_at = coalesce(j.first_claimed_at, v_now),
               updated_at = v_now
          from ready
         where j.id = ready.id
        returning j.id, j.topic, j.payload, j.attempts, j.max_attempts, j.priority,
                  j.lease_token, j.locked_until, j.created_at,
                  j.first_claimed_at + v_execs[1],
                  case when v_execs[1] is not null
                       then greatest(j.first_claimed_at + v_execs[1] - v_now, interval '0') end,
                  j.trace_context,
                  case when j.after_policy is not null then (select v.parents from brooq._job_parents v where v.child = j.id) end;
        if cardinality(v_rated) > 0 then
            -- a rate-limited topic: this claim's jobs enter the window (brooq.claim_window)
            get diagnostics v_n = row_count;
            if v_n > 0 then
                insert into brooq.claim_window (topic, claimed_at, jobs) values (v_rated[1], v_rated_at[1], v_n);
            end if;
        end if;
    else
        -- Several topics: the first max_jobs of the merged heads of every topic's
        -- ordered scan (each at most its cap, see flow control). Locking max_jobs of
        -- every head and merging them would lock 40,000 rows for a claim of 400 from
        -- 100 topics; the merge is found in rounds that lock a little of each head.
        -- The first round locks 1.5 times an even share of max_jobs of each head (the
        -- half more settles, in one round, most claims of topics that interleave).
        -- Then a topic can hold more of the first max_jobs only if it filled its round
        -- and the last row it gave is still among the first max_jobs of all the rows
        -- locked (a topic that gave less is exhausted; one whose last row came later
        -- has nothing more to give). Those topics lock again from the start of their
        -- head (a transaction's own locks do not skip), each twice as many rows, up
        -- to its cap; the one whose last row comes first takes at once all it could
        -- still give, max_jobs minus that row's rank (what it gives comes after its
        -- last row). Rounds end when no topic can give more: the merge is exact.
        -- Rows that lose it stay locked until this transaction ends (a claim's
        -- transaction is short); other claimers skip them.
        v_caps := coalesce(v_caps, array_fill(claim.max_jobs, array[cardinality(v_active)]));
        v_open := v_active;
        v_open_caps := v_caps;
        select array_agg(least(c.cap, ceil(1.5 * claim.max_jobs / cardinality(v_active))::integer)
                         order by c.nth)
          into v_want
          from unnest(v_caps) with ordinality as c(cap, nth);
        loop
            select coalesce(array_agg(u.id), '{}'), coalesce(array_agg(u.topic), '{}'),
                   coalesce(array_agg(u.priority), '{}'), coalesce(array_agg(u.available_at), '{}')
              into v_cand_id, v_cand_topic, v_cand_priority, v_cand_at
              from (select c.id, c.topic, c.priority, c.available_at
                      from unnest(v_cand_id, v_cand_topic, v_cand_priority, v_cand_at)
                           as c(id, topic, priority, available_at)
                     where c.topic <> all(v_open)
                    union all
                    select h.id, a.topic, h.priority, h.available_at
                      from unnest(v_open, v_want) as a(topic, want)
                     cross join lateral (
                           select j.id, j.priority, j.available_at
                             from brooq.job j
                            where j.state in ('pending', 'failed')
                              and j.topic = a.topic
                              and j.available_at <= v_now
                              and j.lease_losses = 0
                              and (j.group_key is null or not exists (
                                      -- an ordered group: only its first active job (see the header)
                                      select from brooq.job k
                                       where k.topic = j.topic and k.group_key = j.group_key and k.group_key is not null
                                         and k.state in ('waiting', 'pending', 'failed', 'processing') and k.group_seq < j.group_seq))
                            order by j.priority desc, j.available_at, j.id
                            limit a.want
                              for no key update skip locked
                     ) as h) as u;
            -- the topics that can give more, and how many rows each locks next
            select array_agg(q.topic), array_agg(q.want), array_agg(q.cap)
              into v_open, v_want, v_open_caps
              from (select o.topic, o.cap,
                           least(o.cap, case when p.last = min(p.last) over ()
                                             then p.n + claim.max_jobs - p.last
                                             else 2 * o.want end) as want
                      from unnest(v_open, v_want, v_open_caps) as o(topic, want, cap)
                      join (select r.topic, count(*) as n, max(r.nth) as last
                              from (select c.topic, row_number() over (order by c.priority desc, c.available_at, c.id) as nth
                                      from unnest(v_cand_id, v_cand_topic, v_cand_priority, v_cand_at)
                                           as c(id, topic, priority, available_at)) as r
                             group by r.topic) as p on p.topic = o.topic
                     where p.n = o.want and o.want < o.cap and p.last < claim.max_jobs) as q;
            exit when v_open is null;
        end loop;
        return query
        with fresh as (
            select c.topic, c.id, c.priority, c.available_at
              from unnest(v_cand_topic, v_cand_id, v_cand_priority, v_cand_at)
                   as c(topic, id, priority, available_at)
        ), suspect as (
            select a.topic, h.id, h.priority, h.available_at
              from unnest(v_active, v_caps) as a(topic, cap)
             cross join lateral (
                   select j.id, j.priority, j.available_at
                     from brooq.job j
                    where j.state in ('pending', 'failed')
                      and j.topic = a.topic
                      and j.available_at <= v_now
                      and j.lease_losses > 0
                      and (j.group_key is null or not exists (
                              -- an ordered group: only its first active job (see the header)
                              select from brooq.job k
                               where k.topic = j.topic and k.group_key = j.group_key and k.group_key is not null
                                 and k.state in ('waiting', 'pending', 'failed', 'processing') and k.group_seq < j.group_seq))
                    order by j.priority desc, j.available_at, j.id
                    limit least(a.cap, 1)
                      for no key update skip locked
             ) as h
             order by h.priority desc, h.available_at, h.id
             limit 1
        ), ready as (
            -- the suspect job may be one more of a topic whose cap fresh filled: at
            -- most cap per topic
            select r.id, a.max_execution
              from (select u.*, row_number() over (partition by u.topic
                                                   order by u.priority desc, u.available_at, u.id) as nth
                      from (select * from fresh union all select * from suspect) as u) as r
              join unnest(v_active, v_caps, v_execs) as a(topic, cap, max_execution)
                on a.topic = r.topic and r.nth <= a.cap
             order by r.priority desc, r.available_at, r.id
             limit claim.max_jobs
        ), claimed as (
            update brooq.job j
               set state = 'processing',
                   attempts = j.attempts + 1,
                   lease_token = v_token,
                   locked_by = claim.worker,
                   locked_until = least(v_now + claim.lease,
                                        case when ready.max_execution is not null
                                             then greatest(coalesce(j.first_claimed_at, v_now) + ready.max_execution, v_now) end),
                   first_claimed_at = coalesce(j.first_claimed_at, v_now),
                   updated_at = v_now
              from ready
             where j.id = ready.id
            returning j.id, j.topic, j.payload, j.attempts, j.max_attempts, j.priority,
                      j.lease_token, j.locked_until, j.created_at,
                      j.first_claimed_at + ready.max_execution as execution_deadline,
                      case when ready.max_execution is not null
                           then greatest(j.first_claimed_at + ready.max_execution - v_now, interval '0') end as execution_left,
                      j.trace_context,
                      case when j.after_policy is not null then (select v.parents from brooq._job_parents v where v.child = j.id) end as parents
        ), counted as (
            -- rate-limited topics: this claim's jobs enter the window (brooq.claim_window)
            insert into brooq.claim_window (topic, claimed_at, jobs)
            select c.topic, r.at, count(*)
              from claimed c
              join unnest(v_rated, v_rated_at) as r(topic, at) on r.topic = c.topic
             group by c.topic, r.at
        )
        select c.id, c.topic, c.payload, c.attempts, c.max_attempts, c.priority, c.lease_token,
               c.locked_until, c.created_at, c.execution_deadline, c.execution_left,
               c.trace_context, c.parents
          from claimed c;
    end if;
end
$$;

comment on function brooq.claim(text, text[], integer, interval) is
'Claim up to max_jobs ready jobs (priority desc, available_at, id; SKIP LOCKED), charging an attempt and setting the lease under a random lease_token, bounded by the job''s max_execution deadline (execution_deadline, execution_left); a topic''s max_in_flight and rate per per are enforced under a lock of the topic. Errors: 22004 NULL argument, 22023 bad worker/max_jobs/lease/topics or a lease above max_lease, 42704 unknown topic, 25000 a flow-limited topic outside READ COMMITTED.';

revoke all on function brooq.claim(text, text[], integer, interval) from public;
grant execute on function brooq.claim(text, text[], integer, interval) to brooq_worker;
