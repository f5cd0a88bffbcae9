-- Verify brooq:table_job on pg
-- Each statement fails (division by zero, or a missing object) when the change is not in place.

begin;

select id, topic, payload, state, priority, attempts, max_attempts, idempotency_key,
       available_at, created_at, updated_at, locked_by, locked_until, lease_token,
       last_error, result
  from brooq.job where false;
select 1 / (count(*) = 4)::int from pg_catalog.pg_indexes
 where schemaname = 'brooq' and indexname in ('job_ready_idx', 'job_lease_idx', 'job_terminal_idx', 'job_idempotency_key_idx');
select 1 / (count(*) = 1)::int from pg_catalog.pg_constraint where conname = 'job_lease_iff_processing';
select 1 / (not pg_catalog.has_table_privilege('brooq_admin', 'brooq.job', 'select'))::int;
select 1 / (not pg_catalog.has_table_privilege('brooq_worker', 'brooq.job', 'update'))::int;

rollback;
