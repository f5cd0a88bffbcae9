-- Verify brooq:table_schedule on pg
-- Each statement fails (a missing object or column) when the change is not in place.

begin;

select name, cron, topic, payload, priority, created_at, updated_at, last_tick_at, last_job_id
  from brooq.schedule
 where false;

rollback;
