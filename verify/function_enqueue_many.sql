-- Verify brooq:function_enqueue_many on pg
-- Each statement fails (division by zero, or a missing object) when the change is not in place.

begin;

-- brooq.enqueue_many(text, jsonb[], text[], timestamptz, integer, interval, text[], jsonb, integer[], bigint[], text): exists, SECURITY DEFINER with a pinned search_path, granted to brooq_producer only.
select 1 / (p.prosecdef and p.proconfig = array['search_path=pg_catalog, pg_temp'])::int
  from pg_catalog.pg_proc p where p.oid = 'brooq.enqueue_many(text, jsonb[], text[], timestamptz, integer, interval, text[], jsonb, integer[], bigint[], text)'::regprocedure;
select 1 / (count(*) = 0)::int from pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
 where p.oid = 'brooq.enqueue_many(text, jsonb[], text[], timestamptz, integer, interval, text[], jsonb, integer[], bigint[], text)'::regprocedure and a.grantee = 0;
select 1 / pg_catalog.has_function_privilege('brooq_producer', 'brooq.enqueue_many(text, jsonb[], text[], timestamptz, integer, interval, text[], jsonb, integer[], bigint[], text)', 'execute')::int;
select 1 / (not pg_catalog.has_function_privilege('brooq_worker', 'brooq.enqueue_many(text, jsonb[], text[], timestamptz, integer, interval, text[], jsonb, integer[], bigint[], text)', 'execute'))::int;

rollback;
