-- Verify brooq:table_job_add_trace_context on pg
-- Each statement fails (division by zero, or a missing object) when the change is not in place.

begin;

select trace_context from brooq.job where false;

rollback;
