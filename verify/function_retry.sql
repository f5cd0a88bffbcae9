-- Verify brooq:function_retry on pg
-- Each statement fails (division by zero, or a missing object) when the change is not in place.

begin;

select 1 / (p.prosecdef and p.proconfig = array['search_path=pg_catalog, pg_temp'])::int
  from pg_catalog.pg_proc p
 where p.oid in ('brooq.retry(bigint, boolean, boolean)'::regprocedure,
                 'brooq.retry_dead(text, boolean, integer, timestamptz, boolean, boolean)'::regprocedure);
select 1 / (count(*) = 0)::int from pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
 where p.oid in ('brooq.retry(bigint, boolean, boolean)'::regprocedure,
                 'brooq.retry_dead(text, boolean, integer, timestamptz, boolean, boolean)'::regprocedure,
                 'brooq._retry(bigint[], text[], boolean, boolean)'::regprocedure) and a.grantee = 0;
select 1 / pg_catalog.has_function_privilege('brooq_admin', 'brooq.retry(bigint, boolean, boolean)', 'execute')::int;

rollback;
