-- Verify brooq:table_topic_add_max_execution on pg
-- Each statement fails (division by zero, or a missing object) when the change is not in place.

begin;

select max_execution from brooq.topic where false;
select 1 / (count(*) = 1)::int from pg_catalog.pg_constraint
 where conrelid = 'brooq.topic'::regclass and conname = 'topic_max_execution_range';

rollback;
