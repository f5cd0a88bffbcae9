-- brooq.health() -> setof brooq.health_check
--
-- What needs a person, one row per check, always the same six rows in this
-- order, each with a status (ok, warn: look at it soon, fail: look at it now)
-- and a detail that says what was seen:
--
--   dead_tuples      dead row versions in brooq.job against the point where
--                    autovacuum starts (its threshold + scale factor x rows, the
--                    table's own settings): warn above 10 times that point,
--                    fail above 100 times. A queue table that vacuum cannot keep
--                    clean slows every claim (SKIP LOCKED walks the dead rows).
--   last_vacuum      when brooq.job was last vacuumed (by autovacuum or by hand):
--                    warn when it is due (dead tuples past the starting point)
--                    and nothing vacuumed it for 1 hour (autovacuum off, or its
--                    workers busy elsewhere).
--   xmin_horizon     the oldest thing holding back vacuum in this database: a
--                    transaction (pid, user, application, since when), a prepared
--                    transaction, or a replication slot. Vacuum cannot remove a
--                    row version it might still see: one transaction open for an
--                    hour keeps an hour of the queue's dead rows. warn: a
--                    transaction open for 5 minutes or more, an inactive slot
--                    holding an xmin, or an xmin 10 million transactions old;
--                    fail: 1 hour, or 100 million transactions.
--   expired_leases   jobs in flight whose lease expired and that nobody reaped:
--                    warn when one expired more than 1 minute ago (workers reap
--                    every lease/2, pg_cron's brooq_reap every minute), fail when
--                    more than 10 minutes ago (no reaper is running).
--   paused_topics    paused topics with ready jobs waiting: warn (a pause
--                    forgotten). A paused topic with nothing ready is ok.
--   lost_leases      jobs not finished that lost their lease 2 times or more in
--                    a row (lease_losses: a worker died or stalled under them,
--                    each time; at the topic's max_lease_losses the job is dead):
--                    warn, naming the worst one.
--
-- SECURITY INVOKER: it reads pg_stat_activity with the caller's rights, so it
-- reports of each session what PostgreSQL shows the caller: all of it for the
-- caller's own role's sessions (every session, to a superuser or a member of
-- pg_read_all_stats); of another role's, only its pid, user, application and
-- transaction ids, not its transaction start, state or query. Such a transaction
-- is judged by its age in transactions alone, and xmin_horizon says how many
-- sessions it could not see. Running as brooq's owner, it would show a worker the
-- transaction starts and states that PostgreSQL hides from it. The three checks that read brooq's private tables (expired_leases,
-- paused_topics, lost_leases) come from brooq._health_jobs(), SECURITY DEFINER
-- and executable by the roles that may call health; the statistics views and
-- pg_class it reads are PUBLIC. Times come from brooq._now(), so a test can move
-- the clock. It reads brooq.job through partial indexes only, and counts at
-- most 10,000 ready jobs per paused topic: about 10 ms on a table of a million
-- rows. (One query over every paused topic at once made the planner guess
-- hundreds of topics before brooq.topic is analyzed, cost enough to switch JIT
-- on: 400 ms of compiling for a query that runs in 0.1 ms.)
--
-- Returns: (name, status, detail) x 6.
-- Errors: none of its own.
-- Touches: reads brooq.job (through its partial indexes), brooq.topic,
-- pg_stat_all_tables, pg_stat_activity, pg_prepared_xacts, pg_replication_slots.
create type brooq.health_check as (
    name   text,
    status text,
    detail text
);

comment on type brooq.health_check is
'A row of brooq.health(): the check''s name, its status (ok, warn, fail) and what was seen.';

-- brooq._health_jobs() -> setof brooq.health_check: the checks of brooq.health
-- that read brooq.job and brooq.topic (expired_leases, paused_topics, lost_leases),
-- with the owner's rights; private, executable by the roles that may call health.
create or replace function brooq._health_jobs()
returns setof brooq.health_check
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_now timestamptz := brooq._now();
    v_count bigint;
    v_oldest timestamptz;
    v_text text;
    v_job record;
    v_ready bigint;
begin
    -- expired_leases ---------------------------------------------------------------
    select count(*), min(j.locked_until) into v_count, v_oldest
      from brooq.job j
     where j.locked_until < v_now - interval '1 minute'
       and j.state = 'processing';
    return next (
        'expired_leases',
        case when v_count = 0 then 'ok' when v_oldest < v_now - interval '10 minutes' then 'fail' else 'warn' end,
        case when v_count = 0 then 'no lease expired more than 1 minute ago'
             else format('%s %s in flight with a lease expired more than 1 minute ago, the oldest at %s (%s ago): is a worker or pg_cron''s brooq_reap running reap?',
                         v_count, case when v_count = 1 then 'job' else 'jobs' end, to_char(v_oldest, 'YYYY-MM-DD HH24:MI:SSOF'), date_trunc('second', v_now - v_oldest)) end
        )::brooq.health_check;

    -- paused_topics -----------------------------------------------------------------
    v_count := 0;
    v_text := null;
    for v_job in
        select t.name, t.updated_at from brooq.topic t where t.paused order by t.name
    loop
        select count(*) into v_ready
          from (select from brooq.job j
                 where j.topic = v_job.name
                   and j.state in ('pending', 'failed')
                   and j.available_at <= v_now
                 limit 10001) as r;
        if v_ready > 0 then
            v_count := v_count + 1;
        end if;
        v_text := concat_ws(', ', v_text,
                            format('%s (%s ready, paused since %s)', v_job.name,
                                   case when v_ready > 10000 then '10000+' else v_ready::text end,
                                   to_char(v_job.updated_at, 'YYYY-MM-DD HH24:MI:SSOF')));
    end loop;
    return next (
        'paused_topics',
        case when v_count > 0 then 'warn' else 'ok' end,
        coalesce('paused: ' || v_text, 'no topic is paused'))::brooq.health_check;

    -- lost_leases ---------------------------------------------------------------------
    select count(*) into v_count
      from brooq.job j
     where j.lease_losses >= 2
       and ((j.state in ('pending', 'failed') and j.lease_losses > 0) or j.locked_until is not null);
    select j.id, j.topic, j.lease_losses, j.attempts, j.max_attempts,
           coalesce(t.max_lease_losses, 5) as max_lease_losses
      into v_job
      from brooq.job j
      left join brooq.topic t on t.name = j.topic
     where j.lease_losses >= 2
       and ((j.state in ('pending', 'failed') and j.lease_losses > 0) or j.locked_until is not null)
     order by j.lease_losses desc, j.id
     limit 1;
    return next (
        'lost_leases',
        case when v_count > 0 then 'warn' else 'ok' end,
        case when v_count = 0 then 'no job lost its lease twice in a row'
             else format('%s %s 2 times or more in a row (a worker died or stalled under them); the worst: job %s of topic %s, %s of max_lease_losses %s, attempts %s/%s',
                         v_count, case when v_count = 1 then 'job lost its lease' else 'jobs lost their lease' end, v_job.id, v_job.topic, v_job.lease_losses, v_job.max_lease_losses,
                         v_job.attempts, v_job.max_attempts) end)::brooq.health_check;
end
$$;

comment on function brooq._health_jobs() is
'Private: the checks of brooq.health that read brooq.job and brooq.topic (expired_leases, paused_topics, lost_leases).';

revoke all on function brooq._health_jobs() from public;
grant execute on function brooq._health_jobs() to brooq_worker, brooq_admin;

create or replace function brooq.health()
returns setof brooq.health_check
language plpgsql
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_now timestamptz := brooq._now();
    v_dead bigint;
    v_live bigint;
    v_rows real;
    v_threshold bigint;
    v_scale float8;
    v_due bigint;
    v_last_auto timestamptz;
    v_last_manual timestamptz;
    v_last timestamptz;
    v_autovacuum boolean;
    v_hidden integer;
    v_holder record;
    v_text text;
begin
    -- dead_tuples, last_vacuum ------------------------------------------------
    select s.n_dead_tup, s.n_live_tup, s.last_autovacuum, s.last_vacuum
      into v_dead, v_live, v_last_auto, v_last_manual
      from pg_stat_all_tables s
     where s.relid = 'brooq.job'::regclass;
    select c.reltuples,
           coalesce((select o.option_value::bigint from pg_options_to_table(c.reloptions) o
                      where o.option_name = 'autovacuum_vacuum_threshold'),
                    current_setting('autovacuum_vacuum_threshold')::bigint),
           coalesce((select o.option_value::float8 from pg_options_to_table(c.reloptions) o
                      where o.option_name = 'autovacuum_vacuum_scale_factor'),
                    current_setting('autovacuum_vacuum_scale_factor')::float8),
           coalesce((select o.option_value::boolean from pg_options_to_table(c.reloptions) o
                      where o.option_name = 'autovacuum_enabled'), true)
           and current_setting('autovacuum')::boolean
      into v_rows, v_threshold, v_scale, v_autovacuum
      from pg_class c
     where c.oid = 'brooq.job'::regclass;
    v_dead := coalesce(v_dead, 0);
    v_live := coalesce(v_live, 0);
    v_due := v_threshold + (v_scale * greatest(v_rows, 0))::bigint;
    return next (
        'dead_tuples',
        case when v_dead > 100 * v_due then 'fail' when v_dead > 10 * v_due then 'warn' else 'ok' end,
        format('%s dead and %s live row versions in brooq.job; autovacuum starts at %s dead', v_dead, v_live, v_due))::brooq.health_check;

    v_last := greatest(v_last_auto, v_last_manual);
    return next (
        'last_vacuum',
        case when v_dead > v_due and (v_last is null or v_last < v_now - interval '1 hour') then 'warn' else 'ok' end,
        format('last autovacuum %s, last manual vacuum %s; %s dead row versions, vacuum due at %s%s',
               coalesce(to_char(v_last_auto, 'YYYY-MM-DD HH24:MI:SSOF') || ' (' || date_trunc('second', v_now - v_last_auto) || ' ago)', 'never'),
               coalesce(to_char(v_last_manual, 'YYYY-MM-DD HH24:MI:SSOF') || ' (' || date_trunc('second', v_now - v_last_manual) || ' ago)', 'never'),
               v_dead, v_due,
               case when v_autovacuum then '' else '; autovacuum is off for brooq.job' end))::brooq.health_check;

    -- xmin_horizon ---------------------------------------------------------------
    select count(*)::integer into v_hidden
      from pg_stat_activity a
     where a.datid = (select d.oid from pg_database d where d.datname = current_database())
       and a.pid <> pg_backend_pid()
       and a.query = '<insufficient privilege>';
    select h.* into v_holder
      from (
        select case when a.query = '<insufficient privilege>'
                    -- what PostgreSQL shows the caller of another role's session
                    then format('transaction of pid %s (user %s, application "%s"; its start is not visible)',
                                a.pid, a.usename, left(a.application_name, 60))
                    else format('transaction of pid %s (user %s, application "%s", %s) open since %s',
                                a.pid, a.usename, left(a.application_name, 60), coalesce(a.state, a.backend_type),
                                to_char(a.xact_start, 'YYYY-MM-DD HH24:MI:SSOF')) end as what,
               greatest(age(a.backend_xmin), age(a.backend_xid)) as xid_age,
               v_now - a.xact_start as open_for,
               null::boolean as inactive_slot
          from pg_stat_activity a
         where (a.datid = (select d.oid from pg_database d where d.datname = current_database()) or a.datid is null)
           and a.pid <> pg_backend_pid()
           and (a.backend_xmin is not null or a.backend_xid is not null)
        union all
        select format('prepared transaction "%s" (owner %s) prepared at %s',
                      left(p.gid, 60), p.owner, to_char(p.prepared, 'YYYY-MM-DD HH24:MI:SSOF')),
               age(p.transaction), v_now - p.prepared, null
          from pg_prepared_xacts p
         where p.database = current_database()
        union all
        select format('replication slot "%s" (%s, %s)', s.slot_name, s.slot_type,
                      case when s.active then 'active' else 'inactive' end),
               age(s.xmin), null, not s.active
          from pg_replication_slots s
         where s.xmin is not null
           and (s.database is null or s.database = current_database())
      ) as h
     order by h.xid_age desc nulls last
     limit 1;
    if v_holder.what is null then
        v_text := 'nothing holds back vacuum';
    else
        v_text := format('oldest: %s, %s %s old%s', v_holder.what, v_holder.xid_age,
                         case when v_holder.xid_age = 1 then 'transaction' else 'transactions' end,
                         case when v_holder.open_for is not null
                              then format(', open for %s', date_trunc('second', v_holder.open_for)) else '' end);
    end if;
    if v_hidden > 0 then
        v_text := v_text || format('; %s %s of other roles not visible: no transaction start, state or query (grant pg_read_all_stats to %s)',
                                   v_hidden, case when v_hidden = 1 then 'session' else 'sessions' end, current_user);
    end if;
    return next (
        'xmin_horizon',
        case when v_holder.what is null then 'ok'
             when v_holder.xid_age >= 100000000 or v_holder.open_for >= interval '1 hour' then 'fail'
             when v_holder.xid_age >= 10000000 or v_holder.open_for >= interval '5 minutes'
                  or v_holder.inactive_slot then 'warn'
             else 'ok' end,
        v_text)::brooq.health_check;

    return query select * from brooq._health_jobs();
end
$$;

comment on function brooq.health() is
'What needs a person: six checks (dead_tuples, last_vacuum, xmin_horizon, expired_leases, paused_topics, lost_leases), each ok, warn or fail, with a detail. No errors of its own.';

revoke all on function brooq.health() from public;
grant execute on function brooq.health() to brooq_worker, brooq_admin;
