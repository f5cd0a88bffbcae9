-- Verify brooq:views on pg
-- Each statement fails (division by zero, or a missing object) when the change is not in place.

begin;

select topic, paused, pending, failed, ready, scheduled, processing, expired, oldest_ready_age
  from brooq.topic_stats where false;
select id, topic, attempts, max_attempts, locked_by, locked_until, claimed_at, running_for, expired
  from brooq.in_flight where false;
select 1 / pg_catalog.has_table_privilege('brooq_worker', 'brooq.topic_stats', 'select')::int;
select 1 / (not pg_catalog.has_table_privilege('brooq_producer', 'brooq.topic_stats', 'select'))::int;
select id, topic, state, attempts, max_attempts, priority, payload, idempotency_key,
       available_at, created_at, updated_at, locked_by, locked_until, last_error, result
  from brooq.jobs where false;
select 1 / pg_catalog.has_table_privilege('brooq_producer', 'brooq.jobs', 'select')::int;
select 1 / (not pg_catalog.has_table_privilege('brooq_producer', 'brooq.jobs', 'update'))::int;

rollback;
