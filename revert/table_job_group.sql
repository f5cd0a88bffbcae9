-- Revert brooq:table_job_group from pg

begin;

drop table brooq.job_group;

commit;
