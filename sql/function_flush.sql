-- brooq.flush(topic, states) -> bigint
--
-- Deletes a topic's jobs in the given states, at once, whatever their age: by
-- default the ones not yet run (pending and failed: "flush"); with
-- array['done', 'dead', 'canceled'] the finished ones, without waiting for the
-- retention ("flush completed"). Never a processing job: a handler holds it (cancel
-- it first, or let it finish). An admin's act. A deleted job's idempotency key is
-- free again. One statement: it locks every row it deletes until the caller
-- commits; a job claimed meanwhile is processing by then and is skipped. The jobs
-- flushed are not counted in brooq.retention_stats (that is retention's).
-- Workflows: 'waiting' (jobs waiting for their parents) may be flushed too; a
-- flushed parent that had not finished counts as canceled for its waiting children
-- (brooq._release: canceled under after_policy cancel, transitively); a finished
-- job with a child that has not finished is kept (its result is the child's); a
-- flushed job takes its edges along.
--
-- Parameters:
--   topic   a declared topic
--   states  text[], a non-empty subset of pending, failed, waiting, done, dead, canceled
--           (default array['pending', 'failed'])
-- Returns: how many jobs were deleted.
-- Errors:
--   22004 null_value_not_allowed   topic or states is NULL
--   42704 undefined_object         the topic was not declared
--   22023 invalid_parameter_value  states empty, or holding NULL, processing or an
--                                  unknown state
-- Touches: deletes rows of brooq.job and their rows of brooq.job_edge, brooq.job_step
-- and brooq.job_wait; through
-- brooq._release, the waiting descendants of the parents it deleted.
create or replace function brooq.flush(topic text, states text[] default array['pending', 'failed'])
returns bigint
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_bad text;
    v_count bigint;
    v_parents bigint[];   -- deleted jobs that had children and had not finished
begin
    if flush.topic is null or flush.states is null then
        raise exception 'brooq.flush: topic and states must not be NULL'
            using errcode = 'null_value_not_allowed',
                  hint = 'Name a topic; leave states out for the jobs not yet run (pending, failed).';
    end if;
    if not exists (select from brooq.topic t where t.name = flush.topic) then
        raise exception 'topic "%" does not exist', left(flush.topic, 200)
            using errcode = 'undefined_object',
                  hint = 'Name a declared topic: select topic from brooq.topic_stats.';
    end if;
    select coalesce(s.state, 'NULL') into v_bad
      from unnest(flush.states) as s(state)
     where s.state is null or s.state not in ('pending', 'failed', 'waiting', 'done', 'dead', 'canceled')
     limit 1;
    if found or cardinality(flush.states) = 0 then
        raise exception 'cannot flush state "%"', left(coalesce(v_bad, ''), 40)
            using errcode = 'invalid_parameter_value',
                  hint = 'Flush pending, failed and waiting or done, dead and canceled (finished) jobs; a processing job is held by a handler: cancel it first.';
    end if;

    with gone as (
        delete from brooq.job j
         where j.topic = flush.topic
           and j.state = any(flush.states)
           and j.state <> 'processing'
           -- a finished parent stays while a child of it has not finished (workflows)
           and not (j.state in ('done', 'dead', 'canceled')
                    and exists (select from brooq.job_edge e
                                  join brooq.job c on c.id = e.child
                                 where e.parent = j.id
                                   and c.state not in ('done', 'dead', 'canceled')))
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
    return v_count;
end
$$;

comment on function brooq.flush(text, text[]) is
'Delete a topic''s jobs in the given states (default pending, failed; waiting; done, dead, canceled for "flush completed"), never processing ones, nor a finished parent a waiting child still needs; a flushed unfinished parent counts as canceled for its children; returns how many. Errors: 22004 NULL, 42704 unknown topic, 22023 bad or processing state.';

revoke all on function brooq.flush(text, text[]) from public;
grant execute on function brooq.flush(text, text[]) to brooq_admin;
