-- Revert brooq:table_flow_lock from pg

begin;

drop table brooq.flow_lock;

commit;
