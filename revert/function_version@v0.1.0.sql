-- Revert brooq:function_version from pg

begin;

drop function brooq.version();

commit;
