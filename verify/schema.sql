-- Verify brooq:schema on pg
-- Each statement fails (division by zero, or a missing object) when the change is not in place.

begin;

select 1 / pg_catalog.has_schema_privilege('brooq_producer', 'brooq', 'usage')::int;
select 1 / (count(*) = 0)::int from pg_catalog.pg_namespace n, pg_catalog.aclexplode(n.nspacl) a
 where n.nspname = 'brooq' and a.grantee = 0;

rollback;
