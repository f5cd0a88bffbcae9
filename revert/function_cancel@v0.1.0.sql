-- Revert brooq:function_cancel from pg

begin;

drop function brooq.cancel(bigint);

commit;
