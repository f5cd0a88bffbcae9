-- Verify brooq:function_parents on pg
-- Each statement fails (division by zero, or a missing object) when the change is not in place.

begin;

select 1 / (p.prosecdef and p.proconfig = array['search_path=pg_catalog, pg_temp'])::int
  from pg_catalog.pg_proc p where p.oid = 'brooq.parents(bigint)'::regprocedure;
select 1 / (count(*) = 0)::int from pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
 where p.oid = 'brooq.parents(bigint)'::regprocedure and a.grantee = 0;
select 1 / pg_catalog.has_function_privilege('brooq_worker', 'brooq.parents(bigint)', 'execute')::int;
select 1 / (p.prosecdef and p.proconfig = array['search_path=pg_catalog, pg_temp'])::int
  from pg_catalog.pg_proc p where p.oid = 'brooq.children(bigint, integer)'::regprocedure;
select 1 / pg_catalog.has_function_privilege('brooq_producer', 'brooq.children(bigint, integer)', 'execute')::int;
select 1 / (not pg_catalog.has_table_privilege('brooq_worker', 'brooq._job_parents', 'select'))::int;

rollback;
