-- brooq.watch(job_id) -> bigint
-- brooq.unwatch(watch_id) -> boolean
--
-- watch: ask to be woken when the job becomes terminal. From then on, settle_many
-- (done, dead, canceled) and cancel send NOTIFY brooq_settled with the job id as
-- payload when they make this job terminal. LISTEN brooq_settled first, then
-- watch, then read the job: a job that became terminal before the watch is seen
-- by that read, one that becomes terminal after it wakes the listener. Returns the
-- watch's id, for unwatch. Drops up to 100 watches older than a day (waiters that
-- died; job_watch_since_idx finds them, so a watch never scans the table).
-- unwatch: forget a watch; false when it was already gone (or never existed).
--
-- A watch id is a random positive 63-bit number (gen_random_uuid's strong
-- randomness, like claim's lease_token), drawn again on the rare collision: unwatch
-- removes only a watch whose id its caller was given, and nobody can guess another
-- caller's. (Sequential ids would let any producer remove the others' watches,
-- and their waiters would sleep to their timeouts.) The id, not the role or the
-- backend, is what proves ownership: two waiters of one login role must not remove
-- each other's watches either, and behind a transaction pooler watch and unwatch
-- may run on different backends.
-- Errors:
--   22004 null_value_not_allowed  a NULL argument
-- Touches: inserts (watch) or deletes (watch: the stale ones; unwatch) rows of
-- brooq.job_watch.
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
    delete from brooq.job_watch w
     where w.id in (select o.id from brooq.job_watch o
                     where o.since < v_now - interval '1 day'
                     order by o.since
                     limit 100
                       for update skip locked);
    loop
        -- the top bit cleared: positive, or 0 (drawn again, like a collision)
        v_id := ('x' || encode(substr(uuid_send(gen_random_uuid()), 1, 8), 'hex'))::bit(64)::bigint
                & 9223372036854775807;
        insert into brooq.job_watch (id, job_id, since)
        select v_id, watch.job_id, v_now
         where v_id > 0
            on conflict on constraint job_watch_pkey do nothing;
        exit when found;
    end loop;
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
