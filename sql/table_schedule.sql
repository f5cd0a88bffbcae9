-- brooq.schedule: one row per periodic job (brooq.schedule registers it), ticked
-- either by pg_cron (a pg_cron job named brooq_schedule.<name> calls
-- brooq._schedule_tick) or by the workers (each calls brooq.tick_schedules on a timer).
-- The job's topic, payload and priority live here, not in pg_cron's command
-- text: the command names the schedule only. Written only by brooq.schedule,
-- brooq.unschedule, brooq._schedule_tick, brooq.tick_schedules and
-- brooq.drop_topic; read through the view brooq.schedules.
--   name          1 to 48 of a-z 0-9 . - _ (pg_cron's job names are at most 63
--                 bytes, with the prefix brooq_schedule.)
--   cron          '*/5 * * * *' (5 fields), '*/10 * * * * *' (6, the seconds first:
--                 the workers only), or '30 seconds' (pg_cron 1.5+, or the workers)
--   ticker        who ticks it: pg_cron, or the workers (brooq.tick_schedules)
--   last_tick_at  the tick of the last job this schedule enqueued
--   last_job_id   that job (it may have been purged since)
--   next_tick_at  the workers' schedules: the next tick owed (NULL for pg_cron's)
--   last_error    the workers' schedules: why the last tick enqueued nothing, if it did not
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
    ticker        text        not null,
    next_tick_at  timestamptz,
    last_error    text,
    constraint schedule_pkey primary key (name),
    constraint schedule_name_valid check (name ~ '^[a-z0-9._-]{1,48}$'),
    constraint schedule_cron_length check (length(cron) between 1 and 100),
    constraint schedule_ticker_valid check (ticker in ('pg_cron', 'workers')),
    constraint schedule_next_tick_workers_only check (ticker = 'workers' or next_tick_at is null)
);

-- brooq.tick_schedules: the workers' schedules that are due, oldest tick first.
create index schedule_due_idx on brooq.schedule (next_tick_at) where ticker = 'workers';

comment on table brooq.schedule is
'Periodic jobs, ticked by pg_cron or by the workers (private: use brooq.schedule, brooq.unschedule, the view brooq.schedules).';

revoke all on table brooq.schedule from public;

-- What brooq.tick_schedules did for one tick of one schedule.
create type brooq.ticked_job as (
    schedule text,         -- the schedule's name
    tick     timestamptz,  -- the tick (the schedule's last_tick_at once its job is enqueued)
    job_id   bigint,       -- the job enqueued; NULL on an error
    created  boolean,      -- true when the tick's job was enqueued, false on an error
    error    text          -- NULL, or the SQLSTATE and message of why nothing was enqueued
);

comment on type brooq.ticked_job is
'What brooq.tick_schedules did for one tick of one schedule: the job enqueued, or why none was.';
