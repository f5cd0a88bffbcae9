-- Revert brooq:function_reap from pg

begin;

drop function brooq.reap(integer);

commit;
