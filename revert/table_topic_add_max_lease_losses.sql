-- Revert brooq:table_topic_add_max_lease_losses from pg

begin;

alter table brooq.topic drop column max_lease_losses;

commit;
