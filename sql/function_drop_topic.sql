-- brooq.drop_topic(name, force) -> bigint
--
-- Removes a topic: its row of brooq.topic and everything kept for it (its row of
-- brooq.flow_lock, its ordered groups' numbers in brooq.job_group, its claims in
-- brooq.claim_window, its counters in brooq.retention_stat). An admin's act, for a
-- topic nobody uses any more: a typo'd `emial` a worker created, a retired one.
-- Refused while the topic still has jobs (in any state) or schedules, unless
-- force => true, which deletes its jobs (processing ones too: their workers find
-- the lease gone, their outcomes are not written) and removes its schedules
-- (with their pg_cron jobs) as well. A worker still serving the topic stops at
-- its next claim (42704); a producer enqueueing into it gets 42704. Locks the
-- topic's row until the caller commits: declare_topic, alter_topic and
-- pause_topic of the topic wait for it. Enqueue does not lock the row (see
-- brooq.enqueue): a job enqueued while the drop commits is left behind, topicless;
-- drop_topic of the same name with force deletes it. Workflows: a deleted job
-- takes its edges along; a deleted parent that had not finished counts as
-- canceled for its waiting children in other topics (brooq._release, as
-- brooq.flush).
--
-- Parameters:
--   name   the topic
--   force  false (default): refuse while jobs or schedules remain; true: delete
--          them with the topic
-- Returns: how many jobs were deleted with it (0 without force).
-- Errors:
--   22004 null_value_not_allowed  name or force is NULL
--   42704 undefined_object        no such topic (and no job left under its name)
--   55006 object_in_use           jobs or schedules remain and force is false
-- Touches: deletes the topic's rows of brooq.topic, brooq.flow_lock, brooq.job_group,
-- brooq.claim_window, brooq.retention_stat, and with force of brooq.job,
-- brooq.schedule and cron.job, and the deleted jobs' rows of brooq.job_edge,
-- brooq.job_step and brooq.job_wait; through
-- brooq._release, the waiting descendants of the unfinished parents it deleted.
create or replace function brooq.drop_topic(name text, force boolean default false)
returns bigint
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_jobs bigint;
    v_schedules text[];
    v_schedule text;
    v_count bigint;
    v_parents bigint[];   -- deleted jobs that had children and had not finished
begin
    if drop_topic.name is null or drop_topic.force is null then
        raise exception 'brooq.drop_topic: name and force must not be NULL'
            using errcode = 'null_value_not_allowed',
                  hint = 'Name a topic; leave force out to refuse while jobs remain.';
    end if;
    perform from brooq.topic t where t.name = drop_topic.name for update;
    if not found and not exists (select from brooq.job j where j.topic = drop_topic.name) then
        raise exception 'topic "%" does not exist', left(drop_topic.name, 200)
            using errcode = 'undefined_object',
                  hint = 'Name a declared topic: select name from brooq.topics.';
    end if;
    if not drop_topic.force then
        select count(*) into v_jobs from brooq.job j where j.topic = drop_topic.name;
        if v_jobs > 0 then
            raise exception 'topic "%" still has % job%', left(drop_topic.name, 200), v_jobs,
                    case when v_jobs = 1 then '' else 's' end
                using errcode = 'object_in_use',
                      hint = 'Drop it with force => true, which deletes them; or empty it first: brooq.flush(topic) for the jobs not yet run, states => array[''waiting''] for those waiting for parents, array[''done'', ''dead'', ''canceled''] for the finished ones.';
        end if;
    end if;
    select array_agg(s.name order by s.name) into v_schedules from brooq.schedule s where s.topic = drop_topic.name;
    if v_schedules is not null and not drop_topic.force then
        raise exception 'topic "%" has % schedule%: %', left(drop_topic.name, 200), cardinality(v_schedules),
                case when cardinality(v_schedules) = 1 then '' else 's' end,
                left(array_to_string(v_schedules, ', '), 200)
            using errcode = 'object_in_use',
                  hint = 'Unschedule them first (brooq.unschedule(name)), or drop it with force => true, which removes them too.';
    end if;
    foreach v_schedule in array coalesce(v_schedules, '{}') loop
        perform brooq.unschedule(v_schedule);  -- its pg_cron job too
    end loop;
    -- Workflows: a deleted job takes its edges to its parents along; a deleted
    -- parent that had not finished counts as canceled for its waiting children in
    -- other topics (brooq._release, as brooq.flush does).
    with gone as (
        delete from brooq.job j where j.topic = drop_topic.name
        returning j.id, j.state, j.after_policy,
                  exists (select from brooq.job_edge e where e.parent = j.id) as parent
    ), edges as (
        delete from brooq.job_edge e
         using gone g
         where g.after_policy is not null and e.child = g.id
    ), steps as (
        -- durable steps: a job's steps and wait go with it
        delete from brooq.job_step s using gone g where s.job_id = g.id
    ), waits as (
        delete from brooq.job_wait w using gone g where w.job_id = g.id
    )
    select count(*), array_agg(g.id) filter (where g.parent and g.state not in ('done', 'dead', 'canceled'))
      into v_count, v_parents
      from gone g;
    if v_parents is not null then
        perform brooq._release(v_parents, array_fill('canceled'::text, array[cardinality(v_parents)]));
    end if;
    delete from brooq.job_group g where g.topic = drop_topic.name;
    delete from brooq.claim_window w where w.topic = drop_topic.name;
    delete from brooq.retention_stat r where r.topic = drop_topic.name;
    delete from brooq.topic t where t.name = drop_topic.name;  -- its flow_lock row cascades
    return v_count;
end
$$;

comment on function brooq.drop_topic(text, boolean) is
'Remove a topic and what is kept for it; refused while it has jobs or schedules unless force => true, which deletes them too; returns the jobs deleted. Errors: 22004 NULL, 42704 unknown topic, 55006 jobs or schedules remain.';

revoke all on function brooq.drop_topic(text, boolean) from public;
grant execute on function brooq.drop_topic(text, boolean) to brooq_admin;
