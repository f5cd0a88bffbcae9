-- Revert brooq:table_job_add_progress from pg

begin;

alter table brooq.job drop column progress;

commit;
