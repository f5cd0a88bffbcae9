-- Revert brooq:table_event from pg

begin;

drop table brooq.event_sweep;
drop table brooq.event;

commit;
