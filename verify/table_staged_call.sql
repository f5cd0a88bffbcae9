-- Verify brooq:table_staged_call on pg
-- Each statement fails (division by zero, or a missing object) when the change is not in place.

begin;

select call_id, state, topic, job_ids, available_at, staged_at, decided_at from brooq.staged_call where false;
select call_id, state, topic, jobs, available_at, staged_at, decided_at from brooq.staged_calls where false;
select 1 / (not pg_catalog.has_table_privilege('brooq_admin', 'brooq.staged_call', 'select'))::int;
select 1 / pg_catalog.has_table_privilege('brooq_admin', 'brooq.staged_calls', 'select')::int;
select 1 / (not pg_catalog.has_table_privilege('brooq_producer', 'brooq.staged_calls', 'select'))::int;

rollback;
