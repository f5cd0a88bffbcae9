-- Verify brooq:table_job_group_holds_waiting on pg
-- Each statement fails (division by zero, or a missing object) when the change is not in place.

begin;

select 1 / (pg_catalog.pg_get_expr(i.indpred, i.indrelid) like '%waiting%')::int
  from pg_catalog.pg_index i where i.indexrelid = 'brooq.job_group_idx'::regclass;

rollback;
