-- brooq.settle(job_id, worker, lease_token, outcome, error, delay, result)
--   -> brooq.job_state
--
-- Writes the outcome of one claimed job: the same rules as brooq.settle_many,
-- which does the work (outcomes done, failed, delay, preserve, cancel).
--
-- Returns: the job's new state, or NULL when the lease is no longer this claim's
-- (canceled, reaped, claimed again, or this settle already happened: a repeat
-- changes nothing). NULL rather than an error, so that a lost lease does not roll
-- back the caller's own writes in the same transaction: check it, and roll back
-- yourself if your writes depend on the outcome.
-- Errors: as brooq.settle_many (22004, 22023).
-- Touches: updates at most one row of brooq.job.
create or replace function brooq.settle(
    job_id bigint,
    worker text,
    lease_token bigint,
    outcome text,
    error text default null,
    delay interval default null,
    result jsonb default null)
returns brooq.job_state
language sql
security definer
set search_path = pg_catalog, pg_temp
as $$
    select s.state
      from brooq.settle_many(settle.worker, array[settle.job_id], array[settle.lease_token],
                             array[settle.outcome], array[settle.error], array[settle.delay],
                             array[settle.result]) as s
$$;

comment on function brooq.settle(bigint, text, bigint, text, text, interval, jsonb) is
'Settle one claimed job (done, failed, delay, preserve, cancel); returns the new state, or NULL when the lease was lost. Errors: 22004, 22023.';

revoke all on function brooq.settle(bigint, text, bigint, text, text, interval, jsonb) from public;
grant execute on function brooq.settle(bigint, text, bigint, text, text, interval, jsonb) to brooq_worker;
