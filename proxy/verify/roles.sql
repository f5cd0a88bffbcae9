-- Verify brooq_proxy:roles on pg
-- Each statement fails (division by zero, or a missing object) when the change is not in place.

begin;

select 1 / (count(*) = 3)::int from pg_catalog.pg_roles
 where rolname in ('brooq_producer', 'brooq_worker', 'brooq_admin') and not rolcanlogin;
select 1 / pg_catalog.pg_has_role('brooq_admin', 'brooq_worker', 'member')::int;
select 1 / pg_catalog.pg_has_role('brooq_admin', 'brooq_producer', 'member')::int;

rollback;
