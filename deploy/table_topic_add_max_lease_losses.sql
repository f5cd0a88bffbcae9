-- Deploy brooq:table_topic_add_max_lease_losses to pg
-- requires: table_topic
-- A migration (written by hand; sql/table_topic.sql holds its result).

begin;

-- The poison pill: a job whose handler kills its process every time is reaped and
-- claimed again forever, since a reap keeps attempts. After max_lease_losses reaps
-- in a row (no outcome written in between), brooq.reap makes it dead instead.
-- A constant default: no rewrite of the table.
alter table brooq.topic
    add column max_lease_losses integer not null default 5,
    add constraint topic_max_lease_losses_range check (max_lease_losses between 1 and 1000);

commit;
