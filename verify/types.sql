-- Verify brooq:types on pg
-- Each statement fails (division by zero, or a missing object) when the change is not in place.

begin;

select 'brooq.enqueued'::regtype, 'brooq.claimed_job'::regtype, 'brooq.settled'::regtype, 'brooq.reaped'::regtype;

rollback;
