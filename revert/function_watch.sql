-- Revert brooq:function_watch from pg

begin;

drop function brooq.unwatch(bigint);
drop function brooq.watch(bigint);

commit;
