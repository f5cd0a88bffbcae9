-- Revert brooq:function_schedule from pg

begin;

-- the pg_cron jobs of the schedules would call a function that is gone
do $$
begin
    if pg_catalog.to_regnamespace('cron') is not null then
        perform cron.unschedule(c.jobid) from cron.job c where c.jobname like 'brooq\_schedule.%';
    end if;
end
$$;
drop view brooq.schedules;
drop function brooq.unschedule(text);
drop function brooq.schedule(text, text, text, jsonb, integer, text);
drop function brooq.tick_schedules(integer);
drop function brooq._schedule_tick(text);
drop function brooq._schedule_next(text, timestamptz);
drop function brooq._cron_values(text, integer, integer, text);
drop function brooq._schedule_tick_at(text, timestamptz);

commit;
