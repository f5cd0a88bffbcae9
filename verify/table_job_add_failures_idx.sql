-- Verify brooq:table_job_add_failures_idx on pg
-- Each statement fails (division by zero, or a missing object) when the change is not in place.

begin;

select 1 / (pg_catalog.pg_get_expr(i.indpred, i.indrelid) like '%canceled%')::int
  from pg_catalog.pg_index i where i.indexrelid = 'brooq.job_failures_idx'::regclass;

rollback;
