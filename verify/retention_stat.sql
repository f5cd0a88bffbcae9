-- Verify brooq:retention_stat on pg
-- Each statement fails (division by zero, or a missing object) when the change is not in place.

begin;

select topic, deleted, remainders, last_purge_at from brooq.retention_stat where false;
select topic, retention, deleted, remainders, last_purge_at from brooq.retention_stats where false;
select 1 / (not pg_catalog.has_table_privilege('brooq_admin', 'brooq.retention_stat', 'select'))::int;
select 1 / pg_catalog.has_table_privilege('brooq_worker', 'brooq.retention_stats', 'select')::int;
select 1 / (not pg_catalog.has_table_privilege('brooq_producer', 'brooq.retention_stats', 'select'))::int;
select 1 / pg_catalog.has_function_privilege('brooq_admin', 'brooq.purge_remainder()', 'execute')::int;

rollback;
