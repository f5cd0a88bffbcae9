-- brooq._backoff(base, cap, attempt) -> interval
--
-- The delay before retry number `attempt`:
--     d = min(base * 2^(attempt - 1), cap), drawn uniformly from [d/2, d].
-- The exponent is capped, so a huge attempt number cannot overflow.
-- A plain LANGUAGE sql expression without SET so that settle can inline it (a SET
-- clause forbids inlining); it is not SECURITY DEFINER, and every name in it is
-- schema-qualified, operators too (OPERATOR(pg_catalog.x)): its body is parsed in
-- the caller's search_path, which outside brooq's pinned functions may put another
-- schema's operators before pg_catalog's. (OPERATOR() syntax has one precedence,
-- left to right: the parentheses say the order.)
create or replace function brooq._backoff(base interval, cap interval, attempt integer)
returns interval
language sql
volatile
parallel safe
as $$
    select pg_catalog.make_interval(secs =>
        least(
            pg_catalog.date_part('epoch', $1)
                operator(pg_catalog.*) pg_catalog.power(2::float8, least(greatest($3 operator(pg_catalog.-) 1, 0), 64)),
            pg_catalog.date_part('epoch', $2))
        operator(pg_catalog.*) (0.5::float8 operator(pg_catalog.+) (pg_catalog.random() operator(pg_catalog.*) 0.5::float8)))
$$;

comment on function brooq._backoff(interval, interval, integer) is
'Private: retry delay for an attempt, min(base * 2^(attempt-1), cap), uniform in [d/2, d].';

revoke all on function brooq._backoff(interval, interval, integer) from public;
