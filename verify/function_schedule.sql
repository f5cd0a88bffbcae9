-- Verify brooq:function_schedule on pg
-- Each statement fails (division by zero, or a missing object) when the change is not in place.

begin;

select 1 / (p.prosecdef and p.proconfig = array['search_path=pg_catalog, pg_temp'])::int
  from pg_catalog.pg_proc p
 where p.oid in ('brooq.schedule(text, text, text, jsonb, integer)'::regprocedure,
                 'brooq.unschedule(text)'::regprocedure);
select 1 / (count(*) = 0)::int from pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
 where p.oid in ('brooq.schedule(text, text, text, jsonb, integer)'::regprocedure,
                 'brooq.unschedule(text)'::regprocedure,
                 'brooq._schedule_tick(text)'::regprocedure,
                 'brooq._schedule_tick_at(text, timestamptz)'::regprocedure) and a.grantee = 0;
select 1 / pg_catalog.has_function_privilege('brooq_admin', 'brooq.schedule(text, text, text, jsonb, integer)', 'execute')::int;
select name, cron, topic, payload, priority, created_at, updated_at, last_tick_at, last_job_id, last_job_state
  from brooq.schedules
 where false;

rollback;
