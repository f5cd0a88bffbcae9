-- brooq._now() -> timestamptz
--
-- The one clock of brooq. Returns the wall clock (clock_timestamp(), not the
-- frozen transaction start now()), unless the setting brooq.now holds an instant:
-- tests freeze time with   set local brooq.now = '2030-01-01 00:00:00+00';
--
-- Deliberately a plain LANGUAGE sql function without SET search_path, so the
-- planner can inline it (a SET clause costs about 0.1 ms per call). Every name in
-- it is schema-qualified, and it is not SECURITY DEFINER, so there is nothing to
-- hijack. Hot-path functions call it once and keep the value in a variable.
create function brooq._now()
returns timestamptz
language sql
volatile
parallel safe
as $$
    select coalesce(
        nullif(pg_catalog.current_setting('brooq.now', true), '')::pg_catalog.timestamptz,
        pg_catalog.clock_timestamp())
$$;

comment on function brooq._now() is
'Private clock: the wall clock, or the instant in the setting brooq.now (tests freeze time with it).';

revoke all on function brooq._now() from public;
-- The views call it with the rights of whoever reads them.
grant execute on function brooq._now() to brooq_worker, brooq_admin;
