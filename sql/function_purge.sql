-- brooq.purge(batch_size) -> bigint
--
-- Deletes one batch of terminal jobs (done, dead, canceled) that have been
-- terminal for longer than their topic's retention; topics with retention 0 are
-- kept forever. Topic by topic (in name order), oldest first within each, at
-- most batch_size rows in all, taken with SKIP LOCKED so several purgers do not
-- wait for each other and each locks only the rows it deletes. Jobs in
-- pending, processing or failed are never deleted, however old. A deleted job's
-- idempotency key becomes free again. The jobs deleted are added to the topic's
-- row of brooq.retention_stat (brooq.retention_stats: deleted, last_purge_at).
-- Workflows: a job with a child that has not finished is kept (the child's handler
-- may read its result), and deleted by a later purge once its children have
-- finished; a job deleted takes its edges to its parents (brooq.job_edge) along.
-- Durable steps: a job deleted takes its steps (brooq.job_step) and its wait
-- (brooq.job_wait) along; then, in the same batch, the events whose keep has run
-- out are deleted (brooq.event, oldest first, SKIP LOCKED), counted in the result.
--
-- Parameters:
--   batch_size  1 to 100000 (default 1000)
-- Returns: the number of jobs and events deleted (less than batch_size: nothing
-- more is due).
-- Errors:
--   22004 null_value_not_allowed   batch_size is NULL
--   22023 invalid_parameter_value  batch_size out of range
-- Touches: deletes up to batch_size rows of brooq.job, and the edges of those that
-- had parents from brooq.job_edge, their steps and waits; up to batch_size expired
-- rows of brooq.event; upserts a row of
-- brooq.retention_stat per topic it deleted jobs of.
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
               -- a parent stays while a child of it has not finished (workflows)
               and not exists (select from brooq.job_edge e
                                 join brooq.job c on c.id = e.child
                                where e.parent = j.id
                                  and c.state not in ('done', 'dead', 'canceled'))
             order by j.updated_at
             limit purge.batch_size - v_deleted
               for update skip locked
        ), gone as (
            delete from brooq.job j
             using due
             where j.id = due.id
            returning j.id, j.after_policy
        ), edges as (
            delete from brooq.job_edge e
             using gone g
             where g.after_policy is not null and e.child = g.id
        ), steps as (
            delete from brooq.job_step s
             using gone g
             where s.job_id = g.id
        ), waits as (
            delete from brooq.job_wait w
             using gone g
             where w.job_id = g.id
        )
        select count(*) into v_rows from gone;
        if v_rows > 0 then
            -- counted per topic for brooq.retention_stats (one upsert per topic and batch)
            insert into brooq.retention_stat as s (topic, deleted, last_purge_at)
            values (v_topic, v_rows, v_now)
            on conflict on constraint retention_stat_pkey do update
                set deleted = s.deleted + excluded.deleted,
                    last_purge_at = excluded.last_purge_at;
        end if;
        v_deleted := v_deleted + v_rows;
        exit when v_deleted >= purge.batch_size;
    end loop;
    -- the events whose keep has run out (durable steps)
    if v_deleted < purge.batch_size then
        with due as (
            select e.id
              from brooq.event e
             where e.expires_at <= v_now
             order by e.expires_at
             limit purge.batch_size - v_deleted
               for update skip locked
        ), gone as (
            delete from brooq.event e using due where e.id = due.id returning e.id
        )
        select count(*) into v_rows from gone;
        v_deleted := v_deleted + v_rows;
    end if;
    return v_deleted;
end
$$;

comment on function brooq.purge(integer) is
'Delete one batch of terminal jobs older than their topic''s retention (0 = keep forever), with their steps, and of expired events; returns how many. Errors: 22004, 22023 bad batch_size.';

revoke all on function brooq.purge(integer) from public;
grant execute on function brooq.purge(integer) to brooq_admin;

-- brooq.purge_all(batch_size, max_batches)   (procedure)
--
-- Runs brooq.purge until a batch comes back short or max_batches batches ran,
-- committing after each batch, so locks are short and dead rows are spread out.
-- Bounded by default (100 batches of 1000: 100,000 jobs a run), so one run, the
-- pg_cron job brooq_purge every 10 minutes say, cannot hog the database after a
-- backlog built up: the rest waits for the next run. When it stops at
-- max_batches with jobs still due, it says so: a WARNING
--   brooq.purge_all: stopped after N batches (M jobs deleted); jobs still due in topics: a, b
-- (SQLSTATE 01000, RAISE WARNING's own; pg_cron records it in cron.job_run_details only on failure,
-- the server log has it) and one more remainder per topic in brooq.retention_stats.
-- Call it outside an explicit transaction block: CALL brooq.purge_all();
-- A procedure that commits cannot be SECURITY DEFINER or carry SET, so it runs
-- with its caller's search_path, and pg_cron runs it as the role that scheduled
-- it (usually a superuser): every operator in it is written
-- OPERATOR(pg_catalog.x) and every function brooq.x or pg_catalog.x, so that
-- nothing resolves through that path (a database owner could otherwise plant
-- evil.<(integer, integer) and run it as the superuser).
--
-- Parameters:
--   batch_size   passed to brooq.purge (default 1000)
--   max_batches  stop after this many batches (default 100); NULL = until done
-- Errors: as brooq.purge; 22023 when max_batches < 1.
create or replace procedure brooq.purge_all(batch_size integer default 1000, max_batches integer default 100)
language plpgsql
as $$
declare
    v_batches integer := 0;
    v_deleted bigint;
    v_total bigint := 0;
    v_topics text[];
begin
    if purge_all.max_batches operator(pg_catalog.<) 1 then
        raise exception 'invalid max_batches %', purge_all.max_batches
            using errcode = 'invalid_parameter_value',
                  hint = 'max_batches must be at least 1, or NULL for no bound.';
    end if;
    loop
        v_deleted := brooq.purge(purge_all.batch_size);
        v_batches := v_batches operator(pg_catalog.+) 1;
        v_total := v_total operator(pg_catalog.+) v_deleted;
        commit;
        exit when v_deleted operator(pg_catalog.<) purge_all.batch_size;
        if v_batches operator(pg_catalog.>=) coalesce(purge_all.max_batches, v_batches operator(pg_catalog.+) 1) then
            -- stopped by the bound with a full last batch: is anything still due?
            v_topics := brooq.purge_remainder();
            if pg_catalog.cardinality(v_topics) operator(pg_catalog.>) 0 then
                raise warning 'brooq.purge_all: stopped after % batches (% jobs deleted); jobs still due in topics: %',
                        v_batches, v_total, pg_catalog.left(pg_catalog.array_to_string(v_topics, ', '), 400)
                    using hint = 'The next run goes on. To catch up sooner, raise max_batches or batch_size, or run purge_all more often.';
            end if;
            exit;
        end if;
    end loop;
end
$$;

comment on procedure brooq.purge_all(integer, integer) is
'Run brooq.purge batch after batch, committing each, until nothing is due or max_batches (default 100) ran; a WARNING (01000) and a remainder per topic in brooq.retention_stats when it stops with jobs still due. Errors: as purge; 22023 bad max_batches.';

revoke all on procedure brooq.purge_all(integer, integer) from public;
grant execute on procedure brooq.purge_all(integer, integer) to brooq_admin;
