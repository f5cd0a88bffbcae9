-- Verify brooq:private_backoff on pg
-- Each statement fails (division by zero, or a missing object) when the change is not in place.

begin;

-- brooq._backoff(interval, interval, integer): private, not executable by PUBLIC nor by producers.
select 1 / (not p.prosecdef)::int from pg_catalog.pg_proc p where p.oid = 'brooq._backoff(interval, interval, integer)'::regprocedure;
select 1 / (count(*) = 0)::int from pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
 where p.oid = 'brooq._backoff(interval, interval, integer)'::regprocedure and a.grantee = 0;
select 1 / (not pg_catalog.has_function_privilege('brooq_producer', 'brooq._backoff(interval, interval, integer)', 'execute'))::int;

rollback;
