-- Revert brooq:retention_stat from pg

begin;

drop function brooq.purge_remainder();
drop view brooq.retention_stats;
drop table brooq.retention_stat;

commit;
