-- Revert brooq:function_schedule_maintenance from pg

begin;

drop function brooq.unschedule_maintenance();
drop function brooq.schedule_maintenance(text, text);
drop function brooq._require_pg_cron();

commit;
