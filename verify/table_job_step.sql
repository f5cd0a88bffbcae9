-- Verify brooq:table_job_step on pg
-- Each statement fails (division by zero, or a missing object) when the change is not in place.

begin;

select job_id, name, kind, result, attempt, at, event_id from brooq.job_step where false;
select job_id, step, event, since, deadline, xid from brooq.job_wait where false;
select 'brooq.job_wait_event_idx'::regclass, 'brooq.job_wait_xid_idx'::regclass;
select 1 / (not pg_catalog.has_table_privilege('brooq_admin', 'brooq.job_step', 'select'))::int;
select 1 / (not pg_catalog.has_table_privilege('brooq_admin', 'brooq.job_wait', 'select'))::int;

rollback;
