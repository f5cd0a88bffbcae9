-- Verify brooq:types_claimed_job_add_trace_context on pg
-- Each statement fails (division by zero, or a missing object) when the change is not in place.

begin;

select (null::brooq.claimed_job).trace_context;

rollback;
