-- brooq.schedule: one row per periodic job (brooq.schedule registers it, with a
-- pg_cron job named brooq_schedule.<name> that calls brooq._schedule_tick).
-- The job's topic, payload and priority live here, not in pg_cron's command
-- text: the command names the schedule only. Written only by brooq.schedule,
-- brooq.unschedule and brooq._schedule_tick; read through the view brooq.schedules.
--   name          1 to 48 of a-z 0-9 . - _ (pg_cron's job names are at most 63
--                 bytes, with the prefix brooq_schedule.)
--   cron          pg_cron's schedule: '*/5 * * * *', or '30 seconds' (pg_cron 1.5+)
--   last_tick_at  the tick of the last job this schedule enqueued
--   last_job_id   that job (it may have been purged since)
create table brooq.schedule (
    name          text        not null,
    cron          text        not null,
    topic         text        not null,
    payload       jsonb       not null,
    priority      integer     not null default 0,
    created_at    timestamptz not null,
    updated_at    timestamptz not null,
    last_tick_at  timestamptz,
    last_job_id   bigint,
    constraint schedule_pkey primary key (name),
    constraint schedule_name_valid check (name ~ '^[a-z0-9._-]{1,48}$'),
    constraint schedule_cron_length check (length(cron) between 1 and 100)
);

comment on table brooq.schedule is
'Periodic jobs registered with pg_cron (private: use brooq.schedule, brooq.unschedule, the view brooq.schedules).';

revoke all on table brooq.schedule from public;
