-- Revert brooq:table_topic_add_flow from pg

begin;

alter table brooq.topic drop column max_in_flight, drop column rate, drop column per;

commit;
