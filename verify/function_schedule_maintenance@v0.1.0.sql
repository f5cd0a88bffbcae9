-- Verify brooq:function_schedule_maintenance on pg
-- Each statement fails (division by zero, or a missing object) when the change is not in place.

begin;

-- brooq.schedule_maintenance(text, text): exists, SECURITY DEFINER with a pinned search_path, granted to brooq_admin only.
select 1 / (p.prosecdef and p.proconfig = array['search_path=pg_catalog, pg_temp'])::int
  from pg_catalog.pg_proc p where p.oid = 'brooq.schedule_maintenance(text, text)'::regprocedure;
select 1 / (count(*) = 0)::int from pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
 where p.oid = 'brooq.schedule_maintenance(text, text)'::regprocedure and a.grantee = 0;
select 1 / pg_catalog.has_function_privilege('brooq_admin', 'brooq.schedule_maintenance(text, text)', 'execute')::int;
select 1 / (not pg_catalog.has_function_privilege('brooq_producer', 'brooq.schedule_maintenance(text, text)', 'execute'))::int;
select 1 / (not pg_catalog.has_function_privilege('brooq_worker', 'brooq.schedule_maintenance(text, text)', 'execute'))::int;

-- brooq.unschedule_maintenance(): exists, SECURITY DEFINER with a pinned search_path, granted to brooq_admin only.
select 1 / (p.prosecdef and p.proconfig = array['search_path=pg_catalog, pg_temp'])::int
  from pg_catalog.pg_proc p where p.oid = 'brooq.unschedule_maintenance()'::regprocedure;
select 1 / (count(*) = 0)::int from pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
 where p.oid = 'brooq.unschedule_maintenance()'::regprocedure and a.grantee = 0;
select 1 / pg_catalog.has_function_privilege('brooq_admin', 'brooq.unschedule_maintenance()', 'execute')::int;
select 1 / (not pg_catalog.has_function_privilege('brooq_producer', 'brooq.unschedule_maintenance()', 'execute'))::int;
select 1 / (not pg_catalog.has_function_privilege('brooq_worker', 'brooq.unschedule_maintenance()', 'execute'))::int;

rollback;
