-- Revert brooq:table_job_watch from pg

begin;

drop table brooq.job_watch;

commit;
