-- Verify brooq:table_flow_lock on pg
-- Each statement fails (division by zero, or a missing object) when the change is not in place.

begin;

select topic from brooq.flow_lock where false;
select 1 / (not pg_catalog.has_table_privilege('brooq_admin', 'brooq.flow_lock', 'update'))::int;
select 1 / (not pg_catalog.has_table_privilege('brooq_worker', 'brooq.flow_lock', 'select'))::int;

rollback;
