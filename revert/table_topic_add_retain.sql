-- Revert brooq:table_topic_add_retain from pg

begin;

alter table brooq.topic drop column retain_done, drop column retain_payload;

commit;
