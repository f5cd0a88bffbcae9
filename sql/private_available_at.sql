-- brooq._available_at(now, available_at, delay) -> timestamptz
--
-- When a new job becomes claimable: available_at, or now + delay, or now.
-- Errors:
--   22023 invalid_parameter_value  available_at not finite, delay negative, or both given
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
        if _available_at.delay < interval '0' then
            raise exception 'invalid delay %', _available_at.delay
                using errcode = 'invalid_parameter_value',
                      hint = 'delay must be zero or positive, e.g. ''5 minutes''.';
        end if;
        return _available_at.now + _available_at.delay;
    end if;
    if _available_at.available_at is null then
        return _available_at.now;
    end if;
    if not pg_catalog.isfinite(_available_at.available_at) then
        raise exception 'invalid available_at %', _available_at.available_at
            using errcode = 'invalid_parameter_value',
                  hint = 'available_at must be a finite instant.';
    end if;
    return _available_at.available_at;
end
$$;

comment on function brooq._available_at(timestamptz, timestamptz, interval) is
'Private: when a new job becomes claimable (available_at, now + delay, or now). Errors: 22023.';

revoke all on function brooq._available_at(timestamptz, timestamptz, interval) from public;
