-- Verify brooq:table_job_edge on pg
-- Each statement fails (division by zero, or a missing object) when the change is not in place.

begin;

select parent, child, settled from brooq.job_edge where false;
select 'brooq.job_edge_child_idx'::regclass;
select child, checked_at from brooq.job_edge_check where false;
select 1 / (not pg_catalog.has_table_privilege('brooq_admin', 'brooq.job_edge', 'select'))::int;

rollback;
