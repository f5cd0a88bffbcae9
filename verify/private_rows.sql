-- Verify brooq:private_rows on pg
-- Each statement fails (division by zero, or a missing object) when the change is not in place.

begin;

-- each unnests its arrays, is estimated at one row, and no role may execute it
select 1 / (count(*) = 2)::int from brooq._settle_rows(array[1, 2], array[3, 4], array['done', 'failed'], null, null, null);
select 1 / (count(*) = 1)::int from brooq._heartbeat_rows(array[1], array[3], null);
select 1 / (p.prorows = 1)::int from pg_catalog.pg_proc p
 where p.oid in ('brooq._settle_rows(bigint[], bigint[], text[], text[], interval[], jsonb[])'::regprocedure,
                 'brooq._heartbeat_rows(bigint[], bigint[], jsonb[])'::regprocedure);
select 1 / (count(*) = 0)::int from pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
 where p.oid in ('brooq._settle_rows(bigint[], bigint[], text[], text[], interval[], jsonb[])'::regprocedure,
                 'brooq._heartbeat_rows(bigint[], bigint[], jsonb[])'::regprocedure) and a.grantee = 0;

rollback;
