-- Revert brooq:private_duration from pg

begin;

drop function brooq._duration_ok(interval);

commit;
