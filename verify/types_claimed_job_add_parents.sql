-- Verify brooq:types_claimed_job_add_parents on pg
-- Each statement fails (division by zero, or a missing object) when the change is not in place.

begin;

select (null::brooq.claimed_job).parents;

rollback;
