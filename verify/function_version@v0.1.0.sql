-- Verify brooq:function_version on pg
-- Each statement fails (division by zero, or a missing object) when the change is not in place.

begin;

-- brooq.version(): exists, SECURITY DEFINER with a pinned search_path, granted to the three roles, not to PUBLIC.
select 1 / (p.prosecdef and p.proconfig = array['search_path=pg_catalog, pg_temp'])::int
  from pg_catalog.pg_proc p where p.oid = 'brooq.version()'::regprocedure;
select 1 / (count(*) = 0)::int from pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
 where p.oid = 'brooq.version()'::regprocedure and a.grantee = 0;
select 1 / pg_catalog.has_function_privilege('brooq_producer', 'brooq.version()', 'execute')::int;
select 1 / pg_catalog.has_function_privilege('brooq_worker', 'brooq.version()', 'execute')::int;
select 1 / (brooq.version() ~ '^[0-9]+\.[0-9]+\.[0-9]+')::int;

rollback;
