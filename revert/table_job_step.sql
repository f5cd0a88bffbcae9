-- Revert brooq:table_job_step from pg

begin;

drop table brooq.job_wait;
drop table brooq.job_step;

commit;
