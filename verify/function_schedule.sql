-- Verify brooq:function_schedule on pg
-- Each statement fails (division by zero, or a missing object) when the change is not in place.

begin;

select 1 / (p.prosecdef and p.proconfig = array['search_path=pg_catalog, pg_temp'])::int
  from pg_catalog.pg_proc p
 where p.oid in ('brooq.schedule(text, text, text, jsonb, integer, text)'::regprocedure,
                 'brooq.unschedule(text)'::regprocedure,
                 'brooq.tick_schedules(integer)'::regprocedure);
select 1 / (count(*) = 0)::int from pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
 where p.oid in ('brooq.schedule(text, text, text, jsonb, integer, text)'::regprocedure,
                 'brooq.unschedule(text)'::regprocedure,
                 'brooq.tick_schedules(integer)'::regprocedure,
                 'brooq._schedule_tick(text)'::regprocedure,
                 'brooq._schedule_tick_at(text, timestamptz)'::regprocedure,
                 'brooq._schedule_next(text, timestamptz)'::regprocedure,
                 'brooq._cron_values(text, integer, integer, text)'::regprocedure) and a.grantee = 0;
select 1 / pg_catalog.has_function_privilege('brooq_admin', 'brooq.schedule(text, text, text, jsonb, integer, text)', 'execute')::int;
select 1 / pg_catalog.has_function_privilege('brooq_worker', 'brooq.tick_schedules(integer)', 'execute')::int;
select name, cron, ticker, topic, payload, priority, created_at, updated_at, next_tick_at, last_tick_at,
       last_job_id, last_job_state, last_error
  from brooq.schedules
 where false;

rollback;
