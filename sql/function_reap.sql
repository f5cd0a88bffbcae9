-- brooq.reap(max_jobs) -> setof brooq.reaped
--
-- Returns jobs whose lease expired (processing, locked_until < now) to pending:
-- available_at = now, lease cleared, attempts unchanged (a crash is not a
-- failure, so a reap never makes a job dead), and last_error notes whose lease
-- expired when. Oldest expiry first, at most max_jobs per call. Rows are taken
-- with SKIP LOCKED, so any number of reapers may run at once.
--
-- Parameters:
--   max_jobs  1 to 100000 (default 1000)
-- Returns: (id, topic) of each job put back.
-- Errors:
--   22004 null_value_not_allowed   max_jobs is NULL
--   22023 invalid_parameter_value  max_jobs out of range
-- Touches: updates up to max_jobs rows of brooq.job.
create or replace function brooq.reap(max_jobs integer default 1000)
returns setof brooq.reaped
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_now timestamptz := brooq._now();
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

    return query
    with expired as (
        select j.id
          from brooq.job j
         where j.locked_until < v_now
           and j.state = 'processing'
         order by j.locked_until
         limit reap.max_jobs
           for no key update skip locked
    )
    update brooq.job j
       set state = 'pending',
           available_at = v_now,
           last_error = format('lease of worker %s expired at %s; job returned to the queue',
                               j.locked_by, j.locked_until),
           locked_by = null,
           locked_until = null,
           updated_at = v_now
      from expired
     where j.id = expired.id
    returning j.id, j.topic;
end
$$;

comment on function brooq.reap(integer) is
'Put jobs whose lease expired back to pending (attempts unchanged); safe to run from many processes. Errors: 22004, 22023 bad max_jobs.';

revoke all on function brooq.reap(integer) from public;
grant execute on function brooq.reap(integer) to brooq_worker;
