-- Verify brooq:function_health on pg
-- Each statement fails (division by zero, or a missing object) when the change is not in place.

begin;

-- health runs with the caller's rights (pg_stat_activity as the caller sees it),
-- the job checks with the owner's
select 1 / (not p.prosecdef and p.proconfig = array['search_path=pg_catalog, pg_temp'])::int
  from pg_catalog.pg_proc p
 where p.oid = 'brooq.health()'::regprocedure;
select 1 / (p.prosecdef and p.proconfig = array['search_path=pg_catalog, pg_temp'])::int
  from pg_catalog.pg_proc p
 where p.oid = 'brooq._health_jobs()'::regprocedure;
select 1 / (count(*) = 0)::int from pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
 where p.oid in ('brooq.health()'::regprocedure, 'brooq._health_jobs()'::regprocedure) and a.grantee = 0;
select 1 / pg_catalog.has_function_privilege('brooq_worker', 'brooq.health()', 'execute')::int;
select 1 / pg_catalog.has_function_privilege('brooq_worker', 'brooq._health_jobs()', 'execute')::int;
select 1 / (not pg_catalog.has_function_privilege('brooq_producer', 'brooq._health_jobs()', 'execute'))::int;
select 'brooq.health_check'::regtype;

rollback;
