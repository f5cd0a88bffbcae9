-- Deploy brooq:table_topic_add_flow to pg
-- requires: table_topic
-- A migration (written by hand; sql/table_topic.sql holds its result).

begin;

-- Flow control, enforced by brooq.claim. NULL = no limit, so every topic
-- keeps today's behaviour, and nullable columns without a default: no rewrite of
-- the table.
--   max_in_flight  at most this many jobs of the topic processing at any moment
--   rate, per      at most rate claims of the topic in any window of length per
alter table brooq.topic
    add column max_in_flight integer,
    add column rate integer,
    add column per interval,
    add constraint topic_max_in_flight_range check (max_in_flight between 1 and 1000000),
    add constraint topic_rate_range check (rate between 1 and 1000000),
    add constraint topic_per_range check (per between interval '1 millisecond' and interval '1 day'),
    add constraint topic_rate_with_per check ((rate is null) = (per is null));

commit;
