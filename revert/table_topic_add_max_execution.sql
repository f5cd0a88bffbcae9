-- Revert brooq:table_topic_add_max_execution from pg

begin;

alter table brooq.topic drop column max_execution;

commit;
