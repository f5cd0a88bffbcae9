-- Revert brooq:private_available_at from pg

begin;

drop function brooq._available_at(timestamptz, timestamptz, interval);

commit;
