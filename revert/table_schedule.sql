-- Revert brooq:table_schedule from pg

begin;

drop table brooq.schedule;

commit;
