-- Revert brooq:function_purge from pg

begin;

drop procedure brooq.purge_all(integer, integer);
drop function brooq.purge(integer);

commit;
