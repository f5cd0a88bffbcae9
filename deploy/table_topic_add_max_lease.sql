-- Deploy brooq:table_topic_add_max_lease to pg
-- requires: table_topic
-- A migration (written by hand; sql/table_topic.sql holds its result).

begin;

-- The longest lease claim and heartbeat may give a job of the topic: without a
-- bound, claim(..., lease => '200000 years') held a job until someone canceled it.
alter table brooq.topic
    add column max_lease interval not null default '1 hour',
    add constraint topic_max_lease_range check (max_lease between interval '1 second' and interval '7 days');

commit;
