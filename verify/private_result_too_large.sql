-- Verify brooq:private_result_too_large on pg
-- Each statement fails (division by zero, or a missing object) when the change is not in place.

begin;

select 1 / (p.proconfig = array['search_path=pg_catalog, pg_temp'])::int
  from pg_catalog.pg_proc p where p.oid = 'brooq._result_too_large(bigint, integer, integer, text)'::regprocedure;
select 1 / (count(*) = 0)::int from pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
 where p.oid = 'brooq._result_too_large(bigint, integer, integer, text)'::regprocedure and a.grantee = 0;

rollback;
