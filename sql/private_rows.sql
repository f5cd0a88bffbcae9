-- brooq._settle_rows(job_ids, lease_tokens, outcomes, errors, delays, results)
--   -> setof (id, token, outcome, error, delay, result)
-- brooq._heartbeat_rows(ids, tokens, progresses) -> setof (id, token, progress)
--
-- unnest() of settle_many's and heartbeat's parallel arrays, with a planner
-- estimate of one row (ROWS 1) instead of unnest's ten. Both callers run on a
-- generic plan made once per session (docs/performance.md, "Generic plans"),
-- maybe while brooq.job's statistics said "empty": with unnest, the plan then
-- drove the join from brooq.job, one scan of the whole table per call as it grew
-- (a settle of 5 jobs: 9.9 ms with 100,000 rows). Estimated at one row, the
-- arguments drive, and each job is one probe of job_pkey (0.65 ms), whatever the
-- statistics said. A PL/pgSQL function, because the planner inlines a SQL one
-- and its estimate with it.
--
-- Private: settle_many and heartbeat call them; no role may.
create or replace function brooq._settle_rows(
    job_ids bigint[], lease_tokens bigint[], outcomes text[],
    errors text[], delays interval[], results jsonb[])
returns table (id bigint, token bigint, outcome text, error text, delay interval, result jsonb)
language plpgsql
immutable
parallel safe
rows 1
set search_path = pg_catalog, pg_temp
as $$
begin
    return query select * from unnest(job_ids, lease_tokens, outcomes, errors, delays, results);
end
$$;

comment on function brooq._settle_rows(bigint[], bigint[], text[], text[], interval[], jsonb[]) is
'Private: unnest of settle_many''s arrays, estimated at one row, so that its generic plan probes job_pkey per job.';

revoke all on function brooq._settle_rows(bigint[], bigint[], text[], text[], interval[], jsonb[]) from public;

create or replace function brooq._heartbeat_rows(ids bigint[], tokens bigint[], progresses jsonb[])
returns table (id bigint, token bigint, progress jsonb)
language plpgsql
immutable
parallel safe
rows 1
set search_path = pg_catalog, pg_temp
as $$
begin
    return query select * from unnest(ids, tokens, progresses);
end
$$;

comment on function brooq._heartbeat_rows(bigint[], bigint[], jsonb[]) is
'Private: unnest of heartbeat''s arrays, estimated at one row, so that its generic plan probes job_pkey per job.';

revoke all on function brooq._heartbeat_rows(bigint[], bigint[], jsonb[]) from public;
