-- Revert brooq:private_backoff from pg

begin;

drop function brooq._backoff(interval, interval, integer);

commit;
