-- Verify brooq:table_topic_add_flow on pg
-- Each statement fails (division by zero, or a missing object) when the change is not in place.

begin;

select max_in_flight, rate, per from brooq.topic where false;
select 1 / (count(*) = 4)::int from pg_catalog.pg_constraint
 where conrelid = 'brooq.topic'::regclass
   and conname in ('topic_max_in_flight_range', 'topic_rate_range', 'topic_per_range', 'topic_rate_with_per');

rollback;
