-- Revert brooq:private_clock from pg

begin;

drop function brooq._now();

commit;
