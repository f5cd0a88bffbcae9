-- Verify brooq:function_emit_event on pg
-- Each statement fails (division by zero, or a missing object) when the change is not in place.

begin;

select 1 / (p.prosecdef and p.proconfig = array['search_path=pg_catalog, pg_temp'])::int
  from pg_catalog.pg_proc p where p.oid = 'brooq.emit_event(text, jsonb, interval)'::regprocedure;
select 1 / (count(*) = 0)::int from pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
 where p.oid in ('brooq.emit_event(text, jsonb, interval)'::regprocedure, 'brooq._wake_missed()'::regprocedure)
   and a.grantee = 0;
select 1 / pg_catalog.has_function_privilege('brooq_producer', 'brooq.emit_event(text, jsonb, interval)', 'execute')::int;
select 1 / (not pg_catalog.has_function_privilege('brooq_worker', 'brooq.emit_event(text, jsonb, interval)', 'execute'))::int;
select 1 / (not pg_catalog.has_function_privilege('brooq_admin', 'brooq._wake_missed()', 'execute'))::int;

rollback;
