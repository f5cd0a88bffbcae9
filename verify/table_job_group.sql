-- Verify brooq:table_job_group on pg
-- Each statement fails (division by zero, or a missing object) when the change is not in place.

begin;

select topic, group_key, last_seq from brooq.job_group where false;
select 1 / (not pg_catalog.has_table_privilege('brooq_admin', 'brooq.job_group', 'select'))::int;

rollback;
