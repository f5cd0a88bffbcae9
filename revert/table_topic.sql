-- Revert brooq:table_topic from pg

begin;

drop table brooq.topic;

commit;
