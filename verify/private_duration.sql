-- Verify brooq:private_duration on pg
-- Each statement fails (division by zero, or a missing object) when the change is not in place.

begin;

select 1 / (brooq._duration_ok(interval '1 day 2 hours') and not brooq._duration_ok(interval '-1 mon 31 days')
            and not brooq._duration_ok(interval '1 mon -29 days'))::int;
select 1 / (count(*) = 0)::int from pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
 where p.oid = 'brooq._duration_ok(interval)'::regprocedure and a.grantee = 0;

rollback;
