-- Revert brooq:function_heartbeat from pg
-- Written by hand (the rework added progress to the signature): drops the new signature,
-- then restores function_heartbeat@v0.1.0, the body of its deploy script.

begin;

drop function brooq.heartbeat(text, bigint[], interval, bigint[], jsonb[]);

-- brooq.heartbeat(worker, job_ids, lease, lease_tokens) -> setof bigint
--
-- Renews the leases this worker still holds: locked_until = now + lease for each
-- listed job that is processing and locked by `worker` (and, when lease_tokens is
-- given, still under that claim). An id missing from the answer means the lease
-- is lost (canceled, reaped, settled): stop its handler and write nothing for it.
-- Call it every lease/3.
--
-- Parameters:
--   worker        the name given to claim
--   job_ids       bigint[] of held jobs
--   lease         the new lease from now; > 0
--   lease_tokens  bigint[] parallel to job_ids, or NULL to fence by worker only
--
-- Returns: the ids whose lease was renewed, in no set order.
-- Errors:
--   22004 null_value_not_allowed   worker, job_ids or lease is NULL
--   22023 invalid_parameter_value  lease not positive; lease_tokens of another length
-- Touches: updates up to cardinality(job_ids) rows of brooq.job.
create or replace function brooq.heartbeat(
    worker text,
    job_ids bigint[],
    lease interval default '30 seconds',
    lease_tokens bigint[] default null)
returns setof bigint
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_now timestamptz := brooq._now();
begin
    if heartbeat.worker is null or heartbeat.job_ids is null or heartbeat.lease is null then
        raise exception 'brooq.heartbeat: worker, job_ids and lease must not be NULL'
            using errcode = 'null_value_not_allowed',
                  hint = 'Pass the worker name and the ids it holds; leave lease out for its default.';
    end if;
    if heartbeat.lease <= interval '0' then
        raise exception 'invalid lease %', heartbeat.lease
            using errcode = 'invalid_parameter_value',
                  hint = 'The lease must be positive, e.g. ''30 seconds''.';
    end if;
    if heartbeat.lease_tokens is not null
        and coalesce(cardinality(heartbeat.lease_tokens), 0) <> coalesce(cardinality(heartbeat.job_ids), 0) then
        raise exception 'lease_tokens has % elements, job_ids has %',
                coalesce(cardinality(heartbeat.lease_tokens), 0), coalesce(cardinality(heartbeat.job_ids), 0)
            using errcode = 'invalid_parameter_value',
                  hint = 'Give one lease token per job id, or NULL.';
    end if;

    return query
    update brooq.job j
       set locked_until = v_now + heartbeat.lease
      from unnest(heartbeat.job_ids, heartbeat.lease_tokens) as u(id, token)
     where j.id = u.id
       and j.state = 'processing'
       and j.locked_by = heartbeat.worker
       and (u.token is null or j.lease_token = u.token)
    returning j.id;
end
$$;

comment on function brooq.heartbeat(text, bigint[], interval, bigint[]) is
'Renew the leases a worker still holds; returns the ids renewed (a missing id = lease lost: stop that handler). Errors: 22004 NULL argument, 22023 bad lease or tokens.';

revoke all on function brooq.heartbeat(text, bigint[], interval, bigint[]) from public;
grant execute on function brooq.heartbeat(text, bigint[], interval, bigint[]) to brooq_worker;

commit;
