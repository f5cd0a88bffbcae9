-- Verify brooq:function_alter_topic on pg
-- Each statement fails (division by zero, or a missing object) when the change is not in place.

begin;

-- brooq.alter_topic(...): exists, SECURITY DEFINER with a pinned search_path, granted to brooq_admin only.
select 1 / (p.prosecdef and p.proconfig = array['search_path=pg_catalog, pg_temp'])::int
  from pg_catalog.pg_proc p where p.oid = 'brooq.alter_topic(text, integer, interval, interval, interval, integer, boolean, interval, integer, integer, integer, interval, interval, boolean, boolean, text[])'::regprocedure;
select 1 / (count(*) = 0)::int from pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
 where p.oid = 'brooq.alter_topic(text, integer, interval, interval, interval, integer, boolean, interval, integer, integer, integer, interval, interval, boolean, boolean, text[])'::regprocedure and a.grantee = 0;
select 1 / pg_catalog.has_function_privilege('brooq_admin', 'brooq.alter_topic(text, integer, interval, interval, interval, integer, boolean, interval, integer, integer, integer, interval, interval, boolean, boolean, text[])', 'execute')::int;
select 1 / (not pg_catalog.has_function_privilege('brooq_worker', 'brooq.alter_topic(text, integer, interval, interval, interval, integer, boolean, interval, integer, integer, integer, interval, interval, boolean, boolean, text[])', 'execute'))::int;

rollback;
