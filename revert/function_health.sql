-- Revert brooq:function_health from pg

begin;

drop function brooq.health();
drop function brooq._health_jobs();
drop type brooq.health_check;

commit;
