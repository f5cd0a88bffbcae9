-- brooq.reap(max_jobs) -> setof brooq.reaped
--
-- Returns jobs whose lease expired (processing, locked_until < now) to pending:
-- available_at = now, lease cleared, attempts unchanged (a crash is not a
-- failure: a reap charges no attempt), lease_losses + 1, and last_error notes
-- whose lease expired when. Oldest expiry first, at most max_jobs per call. Rows
-- are taken with SKIP LOCKED, so any number of reapers may run at once.
--
-- The poison pill: a job whose handler kills its process every time would be
-- reaped and claimed forever. When this reap is the job's max_lease_losses-th in
-- a row (its topic's setting; lease_losses counts reaps since an outcome was
-- last written, and every settle resets it), the job becomes dead instead, lease
-- cleared, attempts unchanged, and last_error says so:
--   'lease lost 5 times in a row (max_lease_losses 5), the last of worker w
--    expired at ...; job dead'
-- This is the only way a job is dead without a failure on its last attempt.
-- A topic declared with retain_payload => false loses the payload of a job reap
-- makes dead (poison pill, or max_execution on the last attempt): 'null'::jsonb,
-- as with any terminal job.
--
-- max_execution: a lease that ran to the job's execution deadline
-- (first_claimed_at + the topic's max_execution <= locked_until: claim and
-- heartbeat never let a lease run past it) is no crash but a job out of time: reap
-- records it as a failed attempt, as settle records outcome failed: failed, retried
-- after the topic's backoff, or dead when it was the last attempt (attempts unchanged,
-- charged at claim; lease_losses back to 0, an outcome was written), and last_error
--   'max_execution 00:05:00 exceeded (first claimed at ..., deadline ...); the
--    attempt of worker w was stopped'
-- It never makes a job dead by itself: only on the last attempt, as any failure.
--
-- Parameters:
--   max_jobs  1 to 100000 (default 1000)
-- Returns: (id, topic) of each job put back, failed (max_execution) or made dead.
-- Errors:
--   22004 null_value_not_allowed   max_jobs is NULL
--   22023 invalid_parameter_value  max_jobs out of range
-- Workflows: a job it makes dead that has children hands them to brooq._release
-- in this transaction (canceled under after_policy cancel, transitively); then
-- brooq._release_missed counts the ends of parents that a settle could not see
-- (a child committed after its parent's settle began), for up to max_jobs children.
-- Durable steps: when some job waits for an event, brooq._wake_missed wakes the
-- waiters whose wait and the emit of their event committed at the same time and
-- missed each other.
-- Touches: updates up to max_jobs rows of brooq.job; through brooq._release, the
-- edges and waiting descendants of the jobs it made dead.
create or replace function brooq.reap(max_jobs integer default 1000)
returns setof brooq.reaped
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_now timestamptz := brooq._now();
    v_rows brooq.reaped[];
    v_parents bigint[];   -- jobs made dead that have children (workflows)
begin
    if reap.max_jobs is null then
        raise exception 'brooq.reap: max_jobs must not be NULL'
            using errcode = 'null_value_not_allowed',
                  hint = 'Leave max_jobs out for its default (1000).';
    end if;
    if reap.max_jobs not between 1 and 100000 then
        raise exception 'invalid max_jobs %', reap.max_jobs
            using errcode = 'invalid_parameter_value',
                  hint = 'max_jobs must be between 1 and 100000.';
    end if;

    -- Topics are never deleted; a job of an unknown topic (written by hand) takes
    -- the default of 5.
    with expired as (
        select j.id,
               j.first_claimed_at + t.max_execution as deadline,
               coalesce(j.first_claimed_at + t.max_execution <= j.locked_until, false) as overdue,
               j.lease_losses + 1 >= coalesce(t.max_lease_losses, 5) as poison,
               coalesce(t.max_lease_losses, 5) as max_losses,
               t.max_execution,
               t.backoff_base,
               t.backoff_max,
               coalesce(t.retain_payload, true) as retain_payload
          from brooq.job j
          left join brooq.topic t on t.name = j.topic
         where j.locked_until < v_now
           and j.state = 'processing'
         order by j.locked_until
         limit reap.max_jobs
           for no key update of j skip locked
    )
    , reaped as (
    update brooq.job j
       set state = case
               when e.overdue and j.attempts >= j.max_attempts then 'dead'
               when e.overdue then 'failed'
               when e.poison then 'dead'
               else 'pending'
           end,
           available_at = case
               when e.overdue then v_now + brooq._backoff(e.backoff_base, e.backoff_max, j.attempts)
               when e.poison then j.available_at
               else v_now
           end,
           lease_losses = case when e.overdue then 0 else j.lease_losses + 1 end,
           -- retain_payload => false: a job made dead keeps no payload
           payload = case
               when not e.retain_payload and (e.overdue and j.attempts >= j.max_attempts
                                              or not e.overdue and e.poison) then 'null'::jsonb
               else j.payload
           end,
           last_error = case
               when e.overdue then format(
                   'max_execution %s exceeded (first claimed at %s, deadline %s); the attempt of worker %s was stopped%s',
                   e.max_execution, j.first_claimed_at, e.deadline, j.locked_by,
                   case when j.attempts >= j.max_attempts then '; job dead (last attempt)' else '' end)
               when e.poison then format(
                   'lease lost %s times in a row (max_lease_losses %s), the last of worker %s expired at %s; job dead',
                   j.lease_losses + 1, e.max_losses, j.locked_by, j.locked_until)
               else format('lease of worker %s expired at %s; job returned to the queue',
                           j.locked_by, j.locked_until)
           end,
           locked_by = null,
           locked_until = null,
           updated_at = v_now
      from expired e
     where j.id = e.id
    returning j.id, j.topic, j.state,
              j.state = 'dead' and exists (select from brooq.job_edge c where c.parent = j.id) as parent
    )
    select coalesce(array_agg(row(r.id, r.topic)::brooq.reaped), '{}'),
           array_agg(r.id) filter (where r.parent)
      into v_rows, v_parents
      from reaped r;
    -- Workflows: the waiting children of a job made dead follow their after_policy.
    if v_parents is not null then
        perform brooq._release(v_parents, array_fill('dead'::text, array[cardinality(v_parents)]));
    end if;
    -- and the ends of parents that a settle could not count (none, as a rule: one
    -- probe of an empty table)
    if exists (select from brooq.job_edge_check) then
        perform brooq._release_missed(reap.max_jobs);
    end if;
    -- and the waits an emit could not see (none, as a rule: one probe of an empty table)
    if exists (select from brooq.job_wait) then
        perform brooq._wake_missed();
    end if;
    return query select * from unnest(v_rows);
end
$$;

comment on function brooq.reap(integer) is
'Put jobs whose lease expired back to pending (attempts unchanged), or make them dead at their topic''s max_lease_losses reaps in a row (the poison pill); a lease that ran to the job''s max_execution deadline is a failed attempt (failed, or dead on the last attempt); safe to run from many processes. Errors: 22004, 22023 bad max_jobs.';

revoke all on function brooq.reap(integer) from public;
grant execute on function brooq.reap(integer) to brooq_worker;
