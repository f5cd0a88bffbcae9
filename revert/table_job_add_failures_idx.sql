-- Revert brooq:table_job_add_failures_idx from pg

begin;

drop index brooq.job_failures_idx;

commit;
