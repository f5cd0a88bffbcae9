-- Verify brooq:function_flush on pg
-- Each statement fails (division by zero, or a missing object) when the change is not in place.

begin;

-- brooq.flush(text, text[]): exists, SECURITY DEFINER with a pinned search_path, granted to brooq_admin only.
select 1 / (p.prosecdef and p.proconfig = array['search_path=pg_catalog, pg_temp'])::int
  from pg_catalog.pg_proc p where p.oid = 'brooq.flush(text, text[])'::regprocedure;
select 1 / pg_catalog.has_function_privilege('brooq_admin', 'brooq.flush(text, text[])', 'execute')::int;
select 1 / (not pg_catalog.has_function_privilege('brooq_worker', 'brooq.flush(text, text[])', 'execute'))::int;
select 1 / (not pg_catalog.has_function_privilege('brooq_producer', 'brooq.flush(text, text[])', 'execute'))::int;

rollback;
