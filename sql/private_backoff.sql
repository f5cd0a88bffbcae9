-- brooq._backoff(base, cap, attempt) -> interval
--
-- The delay before retry number `attempt`:
--     d = min(base * 2^(attempt - 1), cap), drawn uniformly from [d/2, d].
-- The exponent is capped, so a huge attempt number cannot overflow.
-- A plain LANGUAGE sql expression without SET so that settle can inline it; every
-- name is schema-qualified and it is not SECURITY DEFINER.
create or replace function brooq._backoff(base interval, cap interval, attempt integer)
returns interval
language sql
volatile
parallel safe
as $$
    select pg_catalog.make_interval(secs =>
        least(
            pg_catalog.date_part('epoch', $1)
                * pg_catalog.power(2::float8, least(greatest($3 - 1, 0), 64)),
            pg_catalog.date_part('epoch', $2))
        * (0.5 + pg_catalog.random() * 0.5))
$$;

comment on function brooq._backoff(interval, interval, integer) is
'Private: retry delay for an attempt, min(base * 2^(attempt-1), cap), uniform in [d/2, d].';

revoke all on function brooq._backoff(interval, interval, integer) from public;
