-- brooq._duration_ok(d) -> boolean
--
-- True when no part of the interval d is negative: its months (years included),
-- its days and its time. An interval keeps the three apart and they only meet
-- when added to an instant, so a mixed one such as '-1 mon 31 days' compares as
-- "1 day" yet adds 0 days at the end of a 31-day month, and '1 mon -29 days' adds
-- -1 day at the end of February. Callers check d > 0 and an upper bound besides.
-- Returns NULL for NULL.
--
-- Private, and without SET search_path so that it is inlined into its callers
-- (every name is qualified; it runs inside their pinned path).
create or replace function brooq._duration_ok(d interval)
returns boolean
language sql
immutable
parallel safe
as $$
    select pg_catalog.date_part('year', d) operator(pg_catalog.>=) 0
       and pg_catalog.date_part('month', d) operator(pg_catalog.>=) 0
       and pg_catalog.date_part('day', d) operator(pg_catalog.>=) 0
       and pg_catalog.date_part('hour', d) operator(pg_catalog.>=) 0
       and pg_catalog.date_part('minute', d) operator(pg_catalog.>=) 0
       and pg_catalog.date_part('second', d) operator(pg_catalog.>=) 0
$$;

comment on function brooq._duration_ok(interval) is
'Private: true when no part (months, days, time) of an interval is negative. Errors: none.';

revoke all on function brooq._duration_ok(interval) from public;
