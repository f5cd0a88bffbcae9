-- Revert brooq:table_job from pg

begin;

drop table brooq.job;
drop domain brooq.job_state;

commit;
