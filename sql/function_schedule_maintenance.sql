-- brooq.schedule_maintenance(reap_schedule, purge_schedule) -> setof brooq.maintenance_job
-- brooq.unschedule_maintenance() -> integer
--
-- Registers (idempotently: same names, schedules updated) or removes the two
-- pg_cron jobs that keep a queue clean with no worker running:
--   brooq_reap   select pg_catalog.count(*) from brooq.reap(10000)
--   brooq_purge  call brooq.purge_all()
-- They run as the owner of brooq, in this database, with the search_path of
-- that database and role: every name in their text is schema-qualified, so
-- nothing resolves through it (brooq.purge_all qualifies its operators too).
-- Deploying this change rewrites the commands of jobs registered before it.
-- pg_cron must be preloaded
-- (shared_preload_libraries = 'pg_cron') and created in this database, which must
-- be the one named by cron.database_name.
--
-- Parameters:
--   reap_schedule   a cron schedule (default every minute)
--   purge_schedule  a cron schedule (default every 10 minutes)
-- Returns: schedule -> (job_name, schedule, jobid) per job; unschedule -> how many
-- jobs were removed (0 when none was registered).
-- Errors:
--   55000 object_not_in_prerequisite_state  pg_cron is not installed here
--   22004 null_value_not_allowed            a NULL schedule
--   22023 invalid_parameter_value           a schedule longer than 100 characters, or
--                                           one pg_cron rejects (its error)
-- Touches: cron.job rows named brooq_reap and brooq_purge.
create or replace function brooq._require_pg_cron()
returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
begin
    if to_regnamespace('cron') is null then
        raise exception 'pg_cron is not installed in database "%"', current_database()
            using errcode = 'object_not_in_prerequisite_state',
                  hint = 'Add pg_cron to shared_preload_libraries, set cron.database_name to this database, restart, then CREATE EXTENSION pg_cron.';
    end if;
end
$$;

comment on function brooq._require_pg_cron() is 'Private: raise 55000 unless pg_cron is installed in this database.';

create or replace function brooq.schedule_maintenance(
    reap_schedule text default '* * * * *',
    purge_schedule text default '*/10 * * * *')
returns setof brooq.maintenance_job
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
begin
    if schedule_maintenance.reap_schedule is null or schedule_maintenance.purge_schedule is null then
        raise exception 'brooq.schedule_maintenance: schedules must not be NULL'
            using errcode = 'null_value_not_allowed',
                  hint = 'Use unschedule_maintenance() to remove the jobs.';
    end if;
    if length(schedule_maintenance.reap_schedule) > 100 or length(schedule_maintenance.purge_schedule) > 100 then
        raise exception 'invalid schedule "%...": longer than 100 characters',
                left(case when length(schedule_maintenance.reap_schedule) > 100 then schedule_maintenance.reap_schedule
                          else schedule_maintenance.purge_schedule end, 40)
            using errcode = 'invalid_parameter_value',
                  hint = 'Give a cron schedule such as ''*/5 * * * *'' or ''30 seconds''.';
    end if;
    perform brooq._require_pg_cron();
    return query
    select 'brooq_reap', schedule_maintenance.reap_schedule,
           cron.schedule('brooq_reap', schedule_maintenance.reap_schedule,
                         'select pg_catalog.count(*) from brooq.reap(10000)')
    union all
    select 'brooq_purge', schedule_maintenance.purge_schedule,
           cron.schedule('brooq_purge', schedule_maintenance.purge_schedule,
                         'call brooq.purge_all()');
end
$$;

create or replace function brooq.unschedule_maintenance()
returns integer
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_removed integer := 0;
    v_name text;
begin
    perform brooq._require_pg_cron();
    for v_name in
        select c.jobname from cron.job c
         where c.jobname in ('brooq_reap', 'brooq_purge') and c.username = current_user
    loop
        perform cron.unschedule(v_name);
        v_removed := v_removed + 1;
    end loop;
    return v_removed;
end
$$;

-- Jobs registered by 0.1.0 ran 'select count(*) from ...', which resolves count
-- through the database's search_path: rewrite the command of every such job.
-- The deployer's own job through cron.schedule (same name: same job id, any role
-- may), another role's through cron.alter_job (a superuser's right: pg_cron grants
-- it to nobody). Each call only for a job that needs it: PostgreSQL checks EXECUTE
-- on a function when the statement starts, rows or not, so a non-superuser owner
-- could not even deploy into pg_cron's database while the call was unconditional.
do $$
declare
    v_job record;
begin
    if pg_catalog.to_regnamespace('cron') is not null then
        for v_job in
            select c.jobid, c.schedule, c.username from cron.job c
             where c.jobname = 'brooq_reap' and c.command = 'select count(*) from brooq.reap(10000)'
        loop
            if v_job.username = current_user then
                perform cron.schedule('brooq_reap', v_job.schedule, 'select pg_catalog.count(*) from brooq.reap(10000)');
            else
                perform cron.alter_job(v_job.jobid, command => 'select pg_catalog.count(*) from brooq.reap(10000)');
            end if;
        end loop;
    end if;
end
$$;

comment on function brooq.schedule_maintenance(text, text) is
'Register (idempotently) the pg_cron jobs brooq_reap and brooq_purge. Errors: 55000 pg_cron missing, 22004 NULL schedule, 22023 bad or overlong schedule.';
comment on function brooq.unschedule_maintenance() is
'Remove the pg_cron jobs brooq_reap and brooq_purge; returns how many were removed. Errors: 55000 pg_cron missing.';

revoke all on function brooq._require_pg_cron() from public;
revoke all on function brooq.schedule_maintenance(text, text) from public;
revoke all on function brooq.unschedule_maintenance() from public;
grant execute on function brooq.schedule_maintenance(text, text) to brooq_admin;
grant execute on function brooq.unschedule_maintenance() to brooq_admin;
