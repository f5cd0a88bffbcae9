-- Verify brooq:table_job_add_workflow on pg
-- Each statement fails (division by zero, or a missing object) when the change is not in place.

begin;

select after_policy, parents_left, canceled_by from brooq.job where false;
select 1 / (pg_catalog.pg_get_constraintdef(c.oid) ~ 'waiting')::int from pg_catalog.pg_constraint c
 where c.contypid = 'brooq.job_state'::regtype and c.conname = 'job_state_known';

rollback;
