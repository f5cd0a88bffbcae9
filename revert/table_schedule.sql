-- Revert brooq:table_schedule from pg

begin;

drop type brooq.ticked_job;
drop table brooq.schedule;

commit;
