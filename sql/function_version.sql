-- brooq.version() -> text
--
-- The version of the schema in this database, as released (a PEP 440 string such
-- as '0.1.0'; '0.2.0.dev0' between releases). The Python worker reads it at start
-- and refuses a schema older than its package (docs/operations.md, "Upgrading").
-- Reworked at every release, so an upgraded database answers the new version.
--
-- Returns: the version text; never NULL.
-- Errors: none.
-- Touches: nothing.
create or replace function brooq.version()
returns text
language sql
immutable
security definer
set search_path = pg_catalog, pg_temp
as $$
    select '0.2.0.dev0'::text
$$;

comment on function brooq.version() is
'The version of the brooq schema in this database (PEP 440 text). Errors: none.';

revoke all on function brooq.version() from public;
grant execute on function brooq.version() to brooq_producer, brooq_worker, brooq_admin;
