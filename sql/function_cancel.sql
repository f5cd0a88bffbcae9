-- brooq.cancel(job_id) -> boolean
--
-- Cancels a job that is not finished: pending, failed, processing or waiting (for
-- its parents) -> canceled,
-- lease cleared; the payload becomes 'null'::jsonb when the topic was declared
-- with retain_payload => false. A handler running it learns it from its next heartbeat (within
-- lease/3) and its settle writes nothing. A watched job (brooq.watch) wakes its
-- waiters: NOTIFY brooq_settled, its id as payload. A job with children (workflows):
-- its waiting children follow their after_policy in this transaction
-- (brooq._release): canceled under cancel, transitively; under run, this parent
-- counts as finished.
--
-- Returns: true when this call canceled the job; false when there is nothing to
-- cancel: the job is already done, dead or canceled (terminal states are never
-- overwritten), or no job has this id (never existed, or purged). False rather
-- than an error, so canceling is idempotent.
-- Errors:
--   22004 null_value_not_allowed  job_id is NULL
-- Touches: updates at most one row of brooq.job; reads brooq.job_watch; through
-- brooq._release, the job's edges and waiting descendants.
create or replace function brooq.cancel(job_id bigint)
returns boolean
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_parent boolean;  -- an edge names the job: it has children
begin
    if cancel.job_id is null then
        raise exception 'brooq.cancel: job_id must not be NULL'
            using errcode = 'null_value_not_allowed',
                  hint = 'Pass the id that enqueue returned.';
    end if;
    update brooq.job j
       set state = 'canceled',
           -- retain_payload => false: a terminal job keeps no payload
           payload = case
               when (select t.retain_payload from brooq.topic t where t.name = j.topic) is false
                   then 'null'::jsonb
               else j.payload
           end,
           locked_by = null,
           locked_until = null,
           updated_at = brooq._now()
     where j.id = cancel.job_id
       and j.state in ('pending', 'failed', 'processing', 'waiting')
    returning exists (select from brooq.job_edge e where e.parent = j.id) into v_parent;
    if not found then
        return false;
    end if;
    if v_parent then
        perform brooq._release(array[cancel.job_id], array['canceled']);
    end if;
    if exists (select from brooq.job_watch w where w.job_id = cancel.job_id) then
        perform pg_notify('brooq_settled', cancel.job_id::text);  -- wake brooq.wait
    end if;
    return true;
end
$$;

comment on function brooq.cancel(bigint) is
'Cancel a pending, failed, processing or waiting job (its waiting children follow their after_policy); true if canceled, false if terminal or unknown. Errors: 22004 NULL id.';

revoke all on function brooq.cancel(bigint) from public;
grant execute on function brooq.cancel(bigint) to brooq_admin;
