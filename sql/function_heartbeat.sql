-- brooq.heartbeat(worker, job_ids, lease, lease_tokens, progress) -> setof bigint
--
-- Renews the leases this worker still holds: locked_until = now + lease (at most
-- the topic's max_lease) for each listed job that is processing, locked by
-- `worker` and still under the claim that returned its lease token. An id missing
-- from the answer means the lease is lost (canceled, reaped, settled): stop its
-- handler and write nothing for it. Call it every lease/3. It also stores what the
-- handlers reported since the last heartbeat (progress), so that reporting costs
-- no round trip of its own.
--
-- max_execution: for a topic with one, the lease is never renewed past
-- the job's execution deadline (first_claimed_at + max_execution), and once the
-- deadline has come the job is no longer renewed at all: its id is missing from the
-- answer, so a worker that did not stop the attempt itself stops it now, and the
-- next reap records the failure (see brooq.reap).
--
-- Parameters:
--   worker        the name given to claim
--   job_ids       bigint[] of held jobs, at most 10,000
--   lease         the new lease from now; > 0, no negative part; cut to the
--                 topic's max_lease
--   lease_tokens  bigint[] parallel to job_ids: the lease_token claim returned
--                 (required: the worker's name alone proves nothing)
--   progress      jsonb[] parallel to job_ids, or NULL: each job's new progress
--                 (e.g. {"fraction": 0.4, "message": "copying"}); a NULL element
--                 keeps what the job had. At most 4 kB each (bytes of the JSON text)
--
-- Returns: the ids whose lease was renewed, in no set order.
-- Errors:
--   22004 null_value_not_allowed   worker, job_ids, lease or lease_tokens is NULL
--   22023 invalid_parameter_value  lease not positive; lease_tokens or progress of
--                                  another length; an array of more than one dimension
--   54000 program_limit_exceeded   more than 10,000 job ids; a progress over 4 kB
-- Touches: updates up to cardinality(job_ids) rows of brooq.job.
-- The signature without progress (0.1.0's, and this change's before progress).
drop function if exists brooq.heartbeat(text, bigint[], interval, bigint[]);

create or replace function brooq.heartbeat(
    worker text,
    job_ids bigint[],
    lease interval default '30 seconds',
    lease_tokens bigint[] default null,
    progress jsonb[] default null)
returns setof bigint
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
set plan_cache_mode = force_generic_plan  -- see docs/performance.md, "Generic plans"
set enable_seqscan = off  -- with brooq._heartbeat_rows: a plan made on a near-empty table probes job_pkey
set jit = off  -- enable_seqscan = off can price a plan above jit_above_cost (see claim)
as $$
declare
    v_now timestamptz := brooq._now();
begin
    if heartbeat.worker is null or heartbeat.job_ids is null or heartbeat.lease is null
        or heartbeat.lease_tokens is null then
        raise exception 'brooq.heartbeat: worker, job_ids, lease and lease_tokens must not be NULL'
            using errcode = 'null_value_not_allowed',
                  hint = 'Pass the worker name, the ids it holds and the lease_token claim returned for each.';
    end if;
    if heartbeat.lease <= interval '0' or not brooq._duration_ok(heartbeat.lease) then
        raise exception 'invalid lease %', heartbeat.lease
            using errcode = 'invalid_parameter_value',
                  hint = 'The lease must be positive in every part, e.g. ''30 seconds''.';
    end if;
    if array_ndims(heartbeat.job_ids) > 1 or array_ndims(heartbeat.lease_tokens) > 1
        or array_ndims(heartbeat.progress) > 1 then
        raise exception 'brooq.heartbeat: job_ids, lease_tokens and progress must be one-dimensional arrays'
            using errcode = 'invalid_parameter_value',
                  hint = 'Pass array[id, ...], one element per job, and the lease tokens and progress in the same order.';
    end if;
    if coalesce(cardinality(heartbeat.job_ids), 0) > 10000 then
        raise exception 'brooq.heartbeat: % job ids in one call, more than 10000', cardinality(heartbeat.job_ids)
            using errcode = 'program_limit_exceeded',
                  hint = 'Renew at most 10000 leases per call.';
    end if;
    if heartbeat.progress is not null
        and coalesce(cardinality(heartbeat.progress), 0) <> coalesce(cardinality(heartbeat.job_ids), 0) then
        raise exception 'progress has % elements, job_ids has %',
                coalesce(cardinality(heartbeat.progress), 0), coalesce(cardinality(heartbeat.job_ids), 0)
            using errcode = 'invalid_parameter_value',
                  hint = 'Give one progress per job id (NULL to keep a job''s), or NULL for none.';
    end if;
    if heartbeat.progress is not null
        and exists (select from unnest(heartbeat.progress) as p(value) where octet_length(p.value::text) > 4096) then
        raise exception 'brooq.heartbeat: a progress over 4096 bytes'
            using errcode = 'program_limit_exceeded',
                  hint = 'Report a fraction and a short message, e.g. {"fraction": 0.4, "message": "copying"}.';
    end if;
    if coalesce(cardinality(heartbeat.lease_tokens), 0) <> coalesce(cardinality(heartbeat.job_ids), 0) then
        raise exception 'lease_tokens has % elements, job_ids has %',
                coalesce(cardinality(heartbeat.lease_tokens), 0), coalesce(cardinality(heartbeat.job_ids), 0)
            using errcode = 'invalid_parameter_value',
                  hint = 'Give one lease token per job id: the lease_token claim returned.';
    end if;

    return query
    update brooq.job j
       -- least() skips NULL: without max_execution (or first_claimed_at), no bound
       set locked_until = least(v_now + least(heartbeat.lease, t.max_lease),
                                j.first_claimed_at + t.max_execution),
           progress = coalesce(u.progress, j.progress)
      from brooq._heartbeat_rows(heartbeat.job_ids, heartbeat.lease_tokens, heartbeat.progress) as u,
           brooq.topic t
     where j.id = u.id
       and j.state = 'processing'
       and j.locked_by = heartbeat.worker
       and j.lease_token = u.token
       and t.name = j.topic
       and (j.first_claimed_at + t.max_execution > v_now) is not false
    returning j.id;
end
$$;

comment on function brooq.heartbeat(text, bigint[], interval, bigint[], jsonb[]) is
'Renew the leases a worker still holds; returns the ids renewed (a missing id = lease lost: stop that handler); lease tokens required, the lease cut to the topic''s max_lease and to the job''s max_execution deadline (past it, not renewed). Stores the handlers'' progress. Errors: 22004 NULL argument, 22023 bad lease, tokens or progress, or an array of more than one dimension, 54000 more than 10000 ids or a progress over 4 kB.';

revoke all on function brooq.heartbeat(text, bigint[], interval, bigint[], jsonb[]) from public;
grant execute on function brooq.heartbeat(text, bigint[], interval, bigint[], jsonb[]) to brooq_worker;
