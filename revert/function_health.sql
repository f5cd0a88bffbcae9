-- Revert brooq:function_health from pg

begin;

drop function brooq.health();
drop type brooq.health_check;

commit;
