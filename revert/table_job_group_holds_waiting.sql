-- Revert brooq:table_job_group_holds_waiting from pg

begin;

drop index brooq.job_group_idx;
create index job_group_idx on brooq.job (topic, group_key, group_seq)
    where group_key is not null and state in ('pending', 'failed', 'processing');

commit;
