-- Revert brooq:function_heartbeat from pg

begin;

drop function brooq.heartbeat(text, bigint[], interval, bigint[]);

commit;
