-- Verify brooq:table_job_add_progress on pg
-- Each statement fails (division by zero, or a missing object) when the change is not in place.

begin;

select progress from brooq.job where false;

rollback;
