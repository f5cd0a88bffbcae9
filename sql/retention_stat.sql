-- brooq.retention_stat, the view brooq.retention_stats, brooq.purge_remainder()
--
-- brooq.retention_stat: what retention did, per topic. brooq.purge adds the jobs
-- it deletes (one upsert per topic and batch, never on the claim or settle path);
-- brooq.purge_all counts a remainder for each topic that still had jobs due when
-- it stopped at max_batches. Counters since the row was created: they only grow
-- (a Prometheus counter). Read through the view brooq.retention_stats.
--
-- Columns:
--   topic          the topic
--   deleted        terminal jobs deleted by purge (their retention had passed);
--                  jobs deleted by retain_done => false or brooq.flush are not counted
--   remainders     purge_all runs that stopped at max_batches with jobs of this
--                  topic still due
--   last_purge_at  when purge last deleted jobs of this topic
create table brooq.retention_stat (
    topic         text        not null,
    deleted       bigint      not null default 0,
    remainders    bigint      not null default 0,
    last_purge_at timestamptz,
    constraint retention_stat_pkey primary key (topic),
    constraint retention_stat_counts_not_negative check (deleted >= 0 and remainders >= 0)
);

comment on table brooq.retention_stat is
'Jobs deleted by retention and purge_all remainders, per topic (private: written by brooq.purge and brooq.purge_all; read brooq.retention_stats).';

revoke all on table brooq.retention_stat from public;

-- brooq.retention_stats: one row per declared topic, its retention setting and
-- the counters of brooq.retention_stat (0 before the first purge). Readable by
-- the worker (its metrics export brooq_retention_deleted_total and
-- brooq_retention_remainder_total) and the admin.
create or replace view brooq.retention_stats as
select t.name as topic,
       t.retention,
       coalesce(s.deleted, 0) as deleted,
       coalesce(s.remainders, 0) as remainders,
       s.last_purge_at
  from brooq.topic t
  left join brooq.retention_stat s on s.topic = t.name;

comment on view brooq.retention_stats is
'Per topic: jobs deleted by retention (purge) and purge_all runs that left jobs of the topic due (remainders).';

revoke all on brooq.retention_stats from public;
grant select on brooq.retention_stats to brooq_worker, brooq_admin;

-- brooq.purge_remainder() -> text[]
--
-- Called by brooq.purge_all when it stops at max_batches (an admin may call it
-- too): the topics (in name order) that still have terminal jobs past their
-- retention, each counted once more in brooq.retention_stat.remainders; an empty
-- array when nothing is due (nothing counted). One index probe
-- (job_terminal_idx) per topic with a retention.
-- Errors: none.
-- Touches: upserts rows of brooq.retention_stat.
create or replace function brooq.purge_remainder()
returns text[]
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_now timestamptz := brooq._now();
    v_topics text[];
begin
    select array_agg(t.name order by t.name) into v_topics
      from brooq.topic t
     where t.retention > interval '0'
       and exists (select from brooq.job j
                    where j.topic = t.name
                      and j.state in ('done', 'dead', 'canceled')
                      and j.updated_at < v_now - t.retention);
    if v_topics is not null then
        insert into brooq.retention_stat as s (topic, remainders)
        select u.topic, 1 from unnest(v_topics) as u(topic)
        on conflict on constraint retention_stat_pkey do update
            set remainders = s.remainders + 1;
    end if;
    return coalesce(v_topics, '{}');
end
$$;

comment on function brooq.purge_remainder() is
'The topics that still have jobs due for purge, each counted once more as a remainder in brooq.retention_stats (purge_all calls it when it stops at max_batches).';

revoke all on function brooq.purge_remainder() from public;
grant execute on function brooq.purge_remainder() to brooq_admin;
