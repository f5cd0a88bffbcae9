-- Verify brooq:function_steps on pg
-- Each statement fails (division by zero, or a missing object) when the change is not in place.

begin;

select 1 / (p.prosecdef and p.proconfig = array['search_path=pg_catalog, pg_temp'])::int
  from pg_catalog.pg_proc p
 where p.oid in ('brooq.checkpoint(text, bigint, bigint, text, jsonb)'::regprocedure,
                 'brooq.steps(bigint, integer)'::regprocedure,
                 'brooq.sleep(text, bigint, bigint, text, timestamptz, interval)'::regprocedure,
                 'brooq.wait_for_event(text, bigint, bigint, text, text, interval)'::regprocedure);
select 1 / (count(*) = 0)::int from pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
 where p.oid in ('brooq.checkpoint(text, bigint, bigint, text, jsonb)'::regprocedure,
                 'brooq.steps(bigint, integer)'::regprocedure,
                 'brooq.sleep(text, bigint, bigint, text, timestamptz, interval)'::regprocedure,
                 'brooq.wait_for_event(text, bigint, bigint, text, text, interval)'::regprocedure)
   and a.grantee = 0;
select 1 / pg_catalog.has_function_privilege('brooq_worker', 'brooq.checkpoint(text, bigint, bigint, text, jsonb)', 'execute')::int;
select 1 / (not pg_catalog.has_function_privilege('brooq_producer', 'brooq.sleep(text, bigint, bigint, text, timestamptz, interval)', 'execute'))::int;
select 1 / pg_catalog.has_function_privilege('brooq_producer', 'brooq.steps(bigint, integer)', 'execute')::int;

rollback;
