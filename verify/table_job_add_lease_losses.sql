-- Verify brooq:table_job_add_lease_losses on pg
-- Each statement fails (division by zero, or a missing object) when the change is not in place.

begin;

select lease_losses from brooq.job where false;
select 1 / count(*)::int from pg_catalog.pg_constraint
 where conrelid = 'brooq.job'::regclass and conname = 'job_lease_losses_not_negative';
select 1 / count(*)::int from pg_catalog.pg_class where oid = 'brooq.job_suspect_idx'::regclass;

rollback;
