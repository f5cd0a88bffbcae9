-- Verify brooq:function_settle_many on pg
-- Each statement fails (division by zero, or a missing object) when the change is not in place.

begin;

-- brooq.settle_many(text, bigint[], bigint[], text[], text[], interval[], jsonb[]): exists, SECURITY DEFINER with a pinned search_path and generic plans that never scan brooq.job whole nor JIT, granted to brooq_worker only.
select 1 / (p.prosecdef and p.proconfig = array['search_path=pg_catalog, pg_temp', 'plan_cache_mode=force_generic_plan', 'enable_seqscan=off', 'jit=off'])::int
  from pg_catalog.pg_proc p where p.oid = 'brooq.settle_many(text, bigint[], bigint[], text[], text[], interval[], jsonb[])'::regprocedure;
select 1 / (count(*) = 0)::int from pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
 where p.oid = 'brooq.settle_many(text, bigint[], bigint[], text[], text[], interval[], jsonb[])'::regprocedure and a.grantee = 0;
select 1 / pg_catalog.has_function_privilege('brooq_worker', 'brooq.settle_many(text, bigint[], bigint[], text[], text[], interval[], jsonb[])', 'execute')::int;
select 1 / (not pg_catalog.has_function_privilege('brooq_producer', 'brooq.settle_many(text, bigint[], bigint[], text[], text[], interval[], jsonb[])', 'execute'))::int;

rollback;
