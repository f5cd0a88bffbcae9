-- Verify brooq:table_schedule on pg
-- Each statement fails (a missing object or column) when the change is not in place.

begin;

select name, cron, topic, payload, priority, created_at, updated_at, last_tick_at, last_job_id,
       ticker, next_tick_at, last_error
  from brooq.schedule
 where false;
select (null::brooq.ticked_job).schedule, (null::brooq.ticked_job).tick, (null::brooq.ticked_job).job_id,
       (null::brooq.ticked_job).created, (null::brooq.ticked_job).error;

rollback;
