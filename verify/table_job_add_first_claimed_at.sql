-- Verify brooq:table_job_add_first_claimed_at on pg
-- Each statement fails (division by zero, or a missing object) when the change is not in place.

begin;

select first_claimed_at from brooq.job where false;

rollback;
