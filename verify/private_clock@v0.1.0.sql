-- Verify brooq:private_clock on pg
-- Each statement fails (division by zero, or a missing object) when the change is not in place.

begin;

-- brooq._now(): private, not executable by PUBLIC nor by producers.
select 1 / (not p.prosecdef)::int from pg_catalog.pg_proc p where p.oid = 'brooq._now()'::regprocedure;
select 1 / (count(*) = 0)::int from pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
 where p.oid = 'brooq._now()'::regprocedure and a.grantee = 0;
select 1 / (not pg_catalog.has_function_privilege('brooq_producer', 'brooq._now()', 'execute'))::int;

rollback;
