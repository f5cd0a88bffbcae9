-- Verify brooq:function_reap on pg
-- Each statement fails (division by zero, or a missing object) when the change is not in place.

begin;

-- brooq.reap(integer): exists, SECURITY DEFINER with a pinned search_path, granted to brooq_worker only.
select 1 / (p.prosecdef and p.proconfig = array['search_path=pg_catalog, pg_temp'])::int
  from pg_catalog.pg_proc p where p.oid = 'brooq.reap(integer)'::regprocedure;
select 1 / (count(*) = 0)::int from pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
 where p.oid = 'brooq.reap(integer)'::regprocedure and a.grantee = 0;
select 1 / pg_catalog.has_function_privilege('brooq_worker', 'brooq.reap(integer)', 'execute')::int;
select 1 / (not pg_catalog.has_function_privilege('brooq_producer', 'brooq.reap(integer)', 'execute'))::int;
-- the rework: the poison pill (max_lease_losses)
select 1 / (pg_catalog.strpos(p.prosrc, 'max_lease_losses') > 0)::int
  from pg_catalog.pg_proc p where p.oid = 'brooq.reap(integer)'::regprocedure;

rollback;
