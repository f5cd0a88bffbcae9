-- Verify brooq:function_declare_topic on pg
-- Each statement fails (division by zero, or a missing object) when the change is not in place.

begin;

-- brooq.declare_topic(text, integer, interval, interval, interval, integer, boolean, interval, integer, integer, integer, interval, interval, boolean, boolean): exists, SECURITY DEFINER with a pinned search_path, granted to brooq_admin only.
select 1 / (p.prosecdef and p.proconfig = array['search_path=pg_catalog, pg_temp'])::int
  from pg_catalog.pg_proc p where p.oid = 'brooq.declare_topic(text, integer, interval, interval, interval, integer, boolean, interval, integer, integer, integer, interval, interval, boolean, boolean)'::regprocedure;
select 1 / (count(*) = 0)::int from pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
 where p.oid = 'brooq.declare_topic(text, integer, interval, interval, interval, integer, boolean, interval, integer, integer, integer, interval, interval, boolean, boolean)'::regprocedure and a.grantee = 0;
select 1 / pg_catalog.has_function_privilege('brooq_admin', 'brooq.declare_topic(text, integer, interval, interval, interval, integer, boolean, interval, integer, integer, integer, interval, interval, boolean, boolean)', 'execute')::int;
select 1 / (not pg_catalog.has_function_privilege('brooq_producer', 'brooq.declare_topic(text, integer, interval, interval, interval, integer, boolean, interval, integer, integer, integer, interval, interval, boolean, boolean)', 'execute'))::int;
select 1 / (not pg_catalog.has_function_privilege('brooq_worker', 'brooq.declare_topic(text, integer, interval, interval, interval, integer, boolean, interval, integer, integer, integer, interval, interval, boolean, boolean)', 'execute'))::int;
-- brooq._write_topic(brooq.topic): private, no role but the owner may execute it.
select 1 / (not pg_catalog.has_function_privilege('brooq_admin', 'brooq._write_topic(brooq.topic)', 'execute'))::int;

rollback;
