-- Deploy brooq:table_topic_add_max_execution to pg
-- requires: table_topic
-- A migration (written by hand; sql/table_topic.sql holds its result).

begin;

-- The longest a job of the topic may take across all its attempts, counted from
-- its first claim (brooq.job.first_claimed_at): claim and heartbeat bound the
-- lease by it, reap records a lease that ran to it as a failed attempt.
-- NULL = no limit, so every topic keeps today's behaviour; a nullable column
-- without a default: no rewrite of the table.
alter table brooq.topic
    add column max_execution interval,
    add constraint topic_max_execution_range
        check (max_execution between interval '1 second' and interval '100 years');

commit;
