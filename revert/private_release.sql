-- Revert brooq:private_release from pg

begin;

drop function brooq._release(bigint[], text[]);

commit;
