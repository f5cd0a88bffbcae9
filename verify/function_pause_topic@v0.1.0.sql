-- Verify brooq:function_pause_topic on pg
-- Each statement fails (division by zero, or a missing object) when the change is not in place.

begin;

-- brooq.pause_topic(text): exists, SECURITY DEFINER with a pinned search_path, granted to brooq_admin only.
select 1 / (p.prosecdef and p.proconfig = array['search_path=pg_catalog, pg_temp'])::int
  from pg_catalog.pg_proc p where p.oid = 'brooq.pause_topic(text)'::regprocedure;
select 1 / (count(*) = 0)::int from pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
 where p.oid = 'brooq.pause_topic(text)'::regprocedure and a.grantee = 0;
select 1 / pg_catalog.has_function_privilege('brooq_admin', 'brooq.pause_topic(text)', 'execute')::int;
select 1 / (not pg_catalog.has_function_privilege('brooq_producer', 'brooq.pause_topic(text)', 'execute'))::int;
select 1 / (not pg_catalog.has_function_privilege('brooq_worker', 'brooq.pause_topic(text)', 'execute'))::int;

-- brooq.resume_topic(text): exists, SECURITY DEFINER with a pinned search_path, granted to brooq_admin only.
select 1 / (p.prosecdef and p.proconfig = array['search_path=pg_catalog, pg_temp'])::int
  from pg_catalog.pg_proc p where p.oid = 'brooq.resume_topic(text)'::regprocedure;
select 1 / (count(*) = 0)::int from pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
 where p.oid = 'brooq.resume_topic(text)'::regprocedure and a.grantee = 0;
select 1 / pg_catalog.has_function_privilege('brooq_admin', 'brooq.resume_topic(text)', 'execute')::int;
select 1 / (not pg_catalog.has_function_privilege('brooq_producer', 'brooq.resume_topic(text)', 'execute'))::int;
select 1 / (not pg_catalog.has_function_privilege('brooq_worker', 'brooq.resume_topic(text)', 'execute'))::int;

rollback;
