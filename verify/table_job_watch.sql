-- Verify brooq:table_job_watch on pg
-- Each statement fails (division by zero, or a missing object) when the change is not in place.

begin;

select id, job_id, since from brooq.job_watch where false;
select 'brooq.job_watch_since_idx'::regclass;
select 1 / (not pg_catalog.has_table_privilege('brooq_admin', 'brooq.job_watch', 'select'))::int;

rollback;
