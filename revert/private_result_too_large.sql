-- Revert brooq:private_result_too_large from pg

begin;

drop function brooq._result_too_large(bigint, integer, integer, text);

commit;
