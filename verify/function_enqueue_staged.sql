-- Verify brooq:function_enqueue_staged on pg
-- Each statement fails (division by zero, or a missing object) when the change is not in place.

begin;

-- SECURITY DEFINER with a pinned search_path; staging and deciding for brooq_producer, forgetting for brooq_admin.
select 1 / (p.prosecdef and p.proconfig = array['search_path=pg_catalog, pg_temp'])::int
  from pg_catalog.pg_proc p
 where p.oid in ('brooq.enqueue_staged(uuid, text, jsonb[], text[], timestamptz, integer, interval, text[], jsonb)'::regprocedure,
                 'brooq.decide_staged(uuid, text)'::regprocedure,
                 'brooq.forget_staged(interval, uuid[])'::regprocedure);
select 1 / pg_catalog.has_function_privilege('brooq_producer', 'brooq.enqueue_staged(uuid, text, jsonb[], text[], timestamptz, integer, interval, text[], jsonb)', 'execute')::int;
select 1 / pg_catalog.has_function_privilege('brooq_producer', 'brooq.decide_staged(uuid, text)', 'execute')::int;
select 1 / (not pg_catalog.has_function_privilege('brooq_worker', 'brooq.decide_staged(uuid, text)', 'execute'))::int;
select 1 / pg_catalog.has_function_privilege('brooq_admin', 'brooq.forget_staged(interval, uuid[])', 'execute')::int;
select 1 / (not pg_catalog.has_function_privilege('brooq_producer', 'brooq.forget_staged(interval, uuid[])', 'execute'))::int;

rollback;
