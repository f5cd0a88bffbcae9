-- Revert brooq:private_release from pg

begin;

drop function brooq._rearm(bigint[]);
drop function brooq._release(bigint[], text[]);

commit;
