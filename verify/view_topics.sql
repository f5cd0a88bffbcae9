-- Verify brooq:view_topics on pg
-- Each statement fails (division by zero, or a missing object) when the change is not in place.

begin;

-- brooq.topics: every setting, readable by brooq_worker and brooq_admin, not by brooq_producer or PUBLIC.
select name, max_attempts, backoff_base, backoff_max, retention, max_payload_bytes, notify,
       max_lease, max_lease_losses, max_in_flight, rate, per, max_execution, retain_done,
       retain_payload, paused, created_at, updated_at
  from brooq.topics where false;
select 1 / pg_catalog.has_table_privilege('brooq_admin', 'brooq.topics', 'select')::int;
select 1 / pg_catalog.has_table_privilege('brooq_worker', 'brooq.topics', 'select')::int;
select 1 / (not pg_catalog.has_table_privilege('brooq_producer', 'brooq.topics', 'select'))::int;

rollback;
