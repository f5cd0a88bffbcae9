-- Verify brooq:table_job_add_group on pg
-- Each statement fails (division by zero, or a missing object) when the change is not in place.

begin;

select group_key, group_seq from brooq.job where false;
select 1 / (count(*) = 2)::int from pg_catalog.pg_constraint
 where conrelid = 'brooq.job'::regclass and conname in ('job_group_key_valid', 'job_group_seq_iff_key');
select 'brooq.job_group_idx'::regclass;

rollback;
