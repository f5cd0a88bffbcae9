-- Verify brooq:private_release on pg
-- Each statement fails (division by zero, or a missing object) when the change is not in place.

begin;

select 1 / (p.proconfig @> array['search_path=pg_catalog, pg_temp', 'enable_seqscan=off'] and not p.prosecdef)::int
  from pg_catalog.pg_proc p where p.oid = 'brooq._release(bigint[], text[])'::regprocedure;
select 1 / (count(*) = 0)::int from pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
 where p.oid = 'brooq._release(bigint[], text[])'::regprocedure and a.grantee = 0;
select 1 / (count(*) = 0)::int from pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
 where p.oid = 'brooq._release_missed(integer)'::regprocedure and a.grantee = 0;

rollback;
