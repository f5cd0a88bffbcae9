-- brooq._available_at(now, available_at, delay) -> timestamptz
--
-- When a new job becomes claimable: available_at, or now + delay, or now.
-- Every instant it returns is one a client can read: from 0001-01-02 and before
-- 9999-12-31 00:00 UTC (Python's datetime and many drivers hold years 1 to 9999
-- only; a day is left at each end for time zones). A delay is at most 100 years and has no negative part (brooq._duration_ok).
-- Errors:
--   22023 invalid_parameter_value  available_at not finite, before 0001-01-02 or
--                                  from 9999-12-31 on;
--                                  delay negative, mixed-sign or longer than 100
--                                  years; both given
-- Private, and without SET search_path so it costs little per call (every name is
-- schema-qualified; it runs only inside the pinned path of enqueue/enqueue_many).
create or replace function brooq._available_at(now timestamptz, available_at timestamptz, delay interval)
returns timestamptz
language plpgsql
volatile
as $$
begin
    if _available_at.available_at is not null and _available_at.delay is not null then
        raise exception 'give available_at (%) or delay (%), not both', _available_at.available_at, _available_at.delay
            using errcode = 'invalid_parameter_value',
                  hint = 'Use available_at for an instant, delay for a duration from now.';
    end if;
    if _available_at.delay is not null then
        if not brooq._duration_ok(_available_at.delay)
            or _available_at.delay operator(pg_catalog.>) interval '100 years' then
            raise exception 'invalid delay %', _available_at.delay
                using errcode = 'invalid_parameter_value',
                      hint = 'delay must be zero or positive in every part and at most 100 years, e.g. ''5 minutes''.';
        end if;
        return _available_at.now operator(pg_catalog.+) _available_at.delay;
    end if;
    if _available_at.available_at is null then
        return _available_at.now;
    end if;
    if not pg_catalog.isfinite(_available_at.available_at)
        or _available_at.available_at operator(pg_catalog.<) '0001-01-02 00:00:00+00'::timestamptz
        or _available_at.available_at operator(pg_catalog.>=) '9999-12-31 00:00:00+00'::timestamptz then
        raise exception 'invalid available_at %', _available_at.available_at
            using errcode = 'invalid_parameter_value',
                  hint = 'available_at must be an instant from 0001-01-02 to before 9999-12-31 (clients cannot read others).';
    end if;
    return _available_at.available_at;
end
$$;

comment on function brooq._available_at(timestamptz, timestamptz, interval) is
'Private: when a new job becomes claimable (available_at, now + delay, or now). Errors: 22023.';

revoke all on function brooq._available_at(timestamptz, timestamptz, interval) from public;
