-- Verify brooq:table_topic_add_retain on pg
-- Each statement fails (division by zero, or a missing object) when the change is not in place.

begin;

select retain_done, retain_payload from brooq.topic where false;

rollback;
