-- Revert brooq:private_release from pg

begin;

drop function brooq._rearm(bigint[], boolean);
drop function brooq._release_missed(integer);
drop function brooq._release(bigint[], text[]);

commit;
