-- brooq.purge(batch_size) -> bigint
--
-- Deletes one batch of terminal jobs (done, dead, canceled) that have been
-- terminal for longer than their topic's retention; topics with retention 0 are
-- kept forever. Topic by topic (in name order), oldest first within each, at
-- most batch_size rows in all, taken with SKIP LOCKED so several purgers do not
-- wait for each other and each locks only the rows it deletes. Jobs in
-- pending, processing or failed are never deleted, however old. A deleted job's
-- idempotency key becomes free again.
--
-- Parameters:
--   batch_size  1 to 100000 (default 1000)
-- Returns: the number of jobs deleted (less than batch_size: nothing more is due).
-- Errors:
--   22004 null_value_not_allowed   batch_size is NULL
--   22023 invalid_parameter_value  batch_size out of range
-- Touches: deletes up to batch_size rows of brooq.job.
create or replace function brooq.purge(batch_size integer default 1000)
returns bigint
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_now timestamptz := brooq._now();
    v_deleted bigint := 0;
    v_rows bigint;
    v_topic text;
    v_retention interval;
begin
    if purge.batch_size is null then
        raise exception 'brooq.purge: batch_size must not be NULL'
            using errcode = 'null_value_not_allowed',
                  hint = 'Leave batch_size out for its default (1000).';
    end if;
    if purge.batch_size not between 1 and 100000 then
        raise exception 'invalid batch_size %', purge.batch_size
            using errcode = 'invalid_parameter_value',
                  hint = 'batch_size must be between 1 and 100000.';
    end if;

    -- Topic by topic, each one's oldest due rows first: every statement locks only
    -- the rows it deletes and skips those another purger holds.
    for v_topic, v_retention in
        select t.name, t.retention from brooq.topic t
         where t.retention > interval '0'
         order by t.name
    loop
        with due as (
            select j.id
              from brooq.job j
             where j.topic = v_topic
               and j.state in ('done', 'dead', 'canceled')
               and j.updated_at < v_now - v_retention
             order by j.updated_at
             limit purge.batch_size - v_deleted
               for update skip locked
        )
        delete from brooq.job j
         using due
         where j.id = due.id;
        get diagnostics v_rows = row_count;
        v_deleted := v_deleted + v_rows;
        exit when v_deleted >= purge.batch_size;
    end loop;
    return v_deleted;
end
$$;

comment on function brooq.purge(integer) is
'Delete one batch of terminal jobs older than their topic''s retention (0 = keep forever); returns how many. Errors: 22004, 22023 bad batch_size.';

revoke all on function brooq.purge(integer) from public;
grant execute on function brooq.purge(integer) to brooq_admin;

-- brooq.purge_all(batch_size, max_batches)   (procedure)
--
-- Runs brooq.purge until a batch comes back short or max_batches batches ran,
-- committing after each batch, so locks are short and dead rows are spread out.
-- Call it outside an explicit transaction block: CALL brooq.purge_all();
-- A procedure that commits cannot be SECURITY DEFINER or carry SET, so it runs
-- with its caller's search_path, and pg_cron runs it as the role that scheduled
-- it (usually a superuser): every operator in it is written
-- OPERATOR(pg_catalog.x), so that nothing resolves through that path (a database
-- owner could otherwise plant evil.<(integer, integer) and run it as the
-- superuser). Its only SQL is the call of brooq.purge, which pins its path.
--
-- Parameters:
--   batch_size   passed to brooq.purge (default 1000)
--   max_batches  stop after this many batches; NULL = until done
-- Errors: as brooq.purge; 22023 when max_batches < 1.
create or replace procedure brooq.purge_all(batch_size integer default 1000, max_batches integer default null)
language plpgsql
as $$
declare
    v_batches integer := 0;
    v_deleted bigint;
begin
    if purge_all.max_batches operator(pg_catalog.<) 1 then
        raise exception 'invalid max_batches %', purge_all.max_batches
            using errcode = 'invalid_parameter_value',
                  hint = 'max_batches must be at least 1, or NULL for no bound.';
    end if;
    loop
        v_deleted := brooq.purge(purge_all.batch_size);
        v_batches := v_batches operator(pg_catalog.+) 1;
        commit;
        exit when v_deleted operator(pg_catalog.<) purge_all.batch_size
               or v_batches operator(pg_catalog.>=) coalesce(purge_all.max_batches, v_batches operator(pg_catalog.+) 1);
    end loop;
end
$$;

comment on procedure brooq.purge_all(integer, integer) is
'Run brooq.purge batch after batch, committing each, until nothing is due (or max_batches). Errors: as purge; 22023 bad max_batches.';

revoke all on procedure brooq.purge_all(integer, integer) from public;
grant execute on procedure brooq.purge_all(integer, integer) to brooq_admin;
