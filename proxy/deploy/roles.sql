-- Deploy brooq_proxy:roles to pg
-- The same roles as the partitions (../sql/roles.sql): the router grants to them too.

begin;

-- roles: the three NOLOGIN roles that brooq grants to.
--
--   brooq_producer  may enqueue (enqueue, enqueue_many).
--   brooq_worker    may claim, settle, heartbeat and reap, and read the views.
--   brooq_admin     everything: the two roles above, plus declare_topic,
--                   pause/resume, cancel, purge and the pg_cron maintenance.
--
-- Roles are cluster-wide, so several databases may share them: they are created
-- only when missing. Grant them to your login roles:
--   grant brooq_producer to app;  grant brooq_worker to app_worker;
do $$
begin
    if not exists (select from pg_catalog.pg_roles where rolname = 'brooq_producer') then
        create role brooq_producer nologin;
    end if;
    if not exists (select from pg_catalog.pg_roles where rolname = 'brooq_worker') then
        create role brooq_worker nologin;
    end if;
    if not exists (select from pg_catalog.pg_roles where rolname = 'brooq_admin') then
        create role brooq_admin nologin;
    end if;
end
$$;

grant brooq_producer, brooq_worker to brooq_admin;

commit;
