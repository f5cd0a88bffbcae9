-- brooq._now() -> timestamptz
--
-- The one clock of brooq. Returns the wall clock (clock_timestamp(), not the
-- frozen transaction start now()), unless the setting brooq.now holds an instant:
-- tests freeze time with   set local brooq.now = '2030-01-01 00:00:00+00';
-- Only a superuser session may freeze it: anyone else could otherwise move time
-- to take live leases with reap or claim delayed jobs early.
--
-- Errors:
--   42501 insufficient_privilege  brooq.now is set in a session that is not a superuser's
--
-- Deliberately without SET search_path: a SET clause costs about 0.1 ms per call.
-- Every name in it is schema-qualified, operators too (OPERATOR(pg_catalog.=)), so
-- it resolves nothing through the caller's search_path even when called outside
-- the pinned path of brooq's functions (the views, a caller's own query). Hot-path
-- functions call it once and keep the value in a variable.
create or replace function brooq._now()
returns timestamptz
language plpgsql
volatile
parallel safe
as $$
declare
    v_frozen text := pg_catalog.current_setting('brooq.now', true);
begin
    if v_frozen is null or v_frozen operator(pg_catalog.=) '' then
        return pg_catalog.clock_timestamp();
    end if;
    if not (select r.rolsuper from pg_catalog.pg_roles r where r.rolname operator(pg_catalog.=) session_user) then
        raise exception 'brooq.now is set to "%", but only a superuser may freeze brooq''s clock', pg_catalog.left(v_frozen, 40)
            using errcode = 'insufficient_privilege',
                  hint = 'RESET brooq.now; brooq takes its time from the database clock.';
    end if;
    return v_frozen::pg_catalog.timestamptz;
end
$$;

comment on function brooq._now() is
'Private clock: the wall clock, or the instant in brooq.now when a superuser session froze it. Errors: 42501 brooq.now set by a non-superuser.';

revoke all on function brooq._now() from public;
-- The views call it with the rights of whoever reads them.
grant execute on function brooq._now() to brooq_worker, brooq_admin;
