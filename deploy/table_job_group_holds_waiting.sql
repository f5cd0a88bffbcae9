-- Deploy brooq:table_job_group_holds_waiting to pg
-- requires: table_job_add_group
-- requires: table_job_add_workflow
-- A migration (written by hand; sql/table_job.sql holds its result).

begin;

-- A job of an ordered group that waits for its parents (workflows) holds its group's
-- place: claim's probe of an earlier active job of the group reads waiting ones too.
-- Rebuilding the index reads brooq.job once, under a lock that blocks writes to it.
drop index brooq.job_group_idx;
create index job_group_idx on brooq.job (topic, group_key, group_seq)
    where group_key is not null and state in ('waiting', 'pending', 'failed', 'processing');

commit;
