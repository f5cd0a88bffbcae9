-- Verify brooq:table_topic on pg
-- Each statement fails (division by zero, or a missing object) when the change is not in place.

begin;

select name, max_attempts, backoff_base, backoff_max, retention, max_payload_bytes,
       notify, paused, created_at, updated_at
  from brooq.topic where false;
select 1 / (not pg_catalog.has_table_privilege('brooq_admin', 'brooq.topic', 'select'))::int;

rollback;
