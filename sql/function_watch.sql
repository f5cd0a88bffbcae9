-- brooq.watch(job_id) -> bigint
-- brooq.unwatch(watch_id) -> boolean
--
-- watch: ask to be woken when the job becomes terminal. From then on, settle_many
-- (done, dead, canceled) and cancel send NOTIFY brooq_settled with the job id as
-- payload when they make this job terminal. LISTEN brooq_settled first, then
-- watch, then read the job: a job that became terminal before the watch is seen
-- by that read, one that becomes terminal after it wakes the listener. Returns the
-- watch's id, for unwatch. Drops watches older than a day (waiters that died).
-- unwatch: forget a watch; false when it was already gone.
-- Errors:
--   22004 null_value_not_allowed  a NULL argument
-- Touches: inserts (watch) or deletes (unwatch) rows of brooq.job_watch.
create or replace function brooq.watch(job_id bigint)
returns bigint
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_now timestamptz := brooq._now();
    v_id bigint;
begin
    if watch.job_id is null then
        raise exception 'brooq.watch: job_id must not be NULL'
            using errcode = 'null_value_not_allowed',
                  hint = 'Pass the id that enqueue returned.';
    end if;
    delete from brooq.job_watch w where w.since < v_now - interval '1 day';
    insert into brooq.job_watch (job_id, since) values (watch.job_id, v_now)
    returning id into v_id;
    return v_id;
end
$$;

create or replace function brooq.unwatch(watch_id bigint)
returns boolean
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
begin
    if unwatch.watch_id is null then
        raise exception 'brooq.unwatch: watch_id must not be NULL'
            using errcode = 'null_value_not_allowed',
                  hint = 'Pass the id that brooq.watch returned.';
    end if;
    delete from brooq.job_watch w where w.id = unwatch.watch_id;
    return found;
end
$$;

comment on function brooq.watch(bigint) is
'Wake this session (LISTEN brooq_settled) when the job becomes terminal; returns a watch id for unwatch. Errors: 22004 NULL id.';
comment on function brooq.unwatch(bigint) is
'Forget a watch made by brooq.watch; false when it was already gone. Errors: 22004 NULL id.';

revoke all on function brooq.watch(bigint) from public;
revoke all on function brooq.unwatch(bigint) from public;
grant execute on function brooq.watch(bigint) to brooq_producer, brooq_worker, brooq_admin;
grant execute on function brooq.unwatch(bigint) to brooq_producer, brooq_worker, brooq_admin;
