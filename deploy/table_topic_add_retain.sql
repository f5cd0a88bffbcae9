-- Deploy brooq:table_topic_add_retain to pg
-- requires: table_topic
-- A migration (written by hand; sql/table_topic.sql holds its result).

begin;

-- Retention policies. Constant defaults: no rewrite of the
-- table, and every topic keeps today's behaviour.
--   retain_done     false: settle_many deletes a job in the statement that settles it done
--   retain_payload  false: a job's payload becomes 'null'::jsonb when it becomes terminal
alter table brooq.topic
    add column retain_done boolean not null default true,
    add column retain_payload boolean not null default true;

commit;
