-- brooq._release(parents, states) -> integer, the children it made pending or canceled
--
-- Workflows (docs/architecture.md, "Workflows"): counts the end of each parent
-- (just made terminal by the caller, in the caller's transaction) in its children,
-- once per (parent, child) edge. Every function that makes a job with has_children
-- terminal calls it with those jobs and the state each ended in: settle_many (and
-- so settle), cancel, reap, flush and drop_topic (a deleted parent counts as
-- canceled).
--
-- Per child, in one update of its row: parents_left goes down by the number of its
-- parents in this call; the child becomes pending when that reaches 0, or canceled
-- at once when one of them ended dead or canceled and its after_policy is cancel
-- (last_error and canceled_by name that parent). The children are locked in id order first, so
-- two releases sharing children wait for each other and never deadlock, and the
-- later one's update reads the counter the earlier one left: exactly one of many
-- parents finishing at once makes the child pending. A child canceled meanwhile
-- keeps counting (only parents_left changes), so a re-drive finds the truth.
-- Then the same for the children it canceled that have children (transitively),
-- a NOTIFY brooq for each topic that got a ready job (if the topic notifies), and
-- brooq_settled for the canceled children somebody watches (brooq.wait).
--
-- Parameters:
--   parents  the ids of jobs that just ended (terminal, or deleted)
--   states   per parent, how it ended: done, dead or canceled
-- Touches: updates brooq.job_edge (settled) and the children's rows of brooq.job.
create or replace function brooq._release(parents bigint[], states text[])
returns integer
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
    v_now timestamptz := brooq._now();
    v_parents bigint[] := _release.parents;
    v_states text[] := _release.states;
    v_changed integer := 0;
    v_n integer;
    v_ready_topics text[];
    v_canceled bigint[];
begin
    while coalesce(cardinality(v_parents), 0) > 0 loop
        -- The children, locked in id order: two releases sharing children wait for
        -- each other, and the statement below reads their newest versions.
        perform from brooq.job c
         where c.id in (select e.child from brooq.job_edge e
                         where e.parent = any(v_parents) and not e.settled)
           and (c.state = 'waiting' or c.state = 'canceled' and c.parents_left > 0)
         order by c.id
           for no key update of c;

        with counted as (
            update brooq.job_edge e
               set settled = true
              from unnest(v_parents, v_states) as p(id, state)
             where e.parent = p.id and not e.settled
            returning e.child, e.parent, p.state
        ), per_child as (
            -- was: the child's state before this update, read under the lock taken above
            select k.child, count(*)::integer as n,
                   min(k.parent) filter (where k.state <> 'done') as bad_parent,
                   (array_agg(k.state order by k.parent) filter (where k.state <> 'done'))[1] as bad_state,
                   min(c0.state) as was
              from counted k
              join brooq.job c0 on c0.id = k.child
             group by k.child
        ), changed as (
            update brooq.job c
               set parents_left = c.parents_left - pc.n,
                   state = case
                       when c.state <> 'waiting' then c.state
                       when pc.bad_parent is not null and c.after_policy = 'cancel' then 'canceled'
                       when c.parents_left = pc.n then 'pending'
                       else 'waiting'
                   end,
                   available_at = case
                       when c.state = 'waiting' and c.parents_left = pc.n
                            and not (pc.bad_parent is not null and c.after_policy = 'cancel')
                           then greatest(c.available_at, v_now)
                       else c.available_at
                   end,
                   last_error = case
                       when c.state = 'waiting' and pc.bad_parent is not null and c.after_policy = 'cancel'
                           then format('parent job %s ended %s (after_policy cancel)', pc.bad_parent, pc.bad_state)
                       else c.last_error
                   end,
                   canceled_by = case
                       when c.state = 'waiting' and pc.bad_parent is not null and c.after_policy = 'cancel'
                           then pc.bad_parent
                       else c.canceled_by
                   end,
                   -- retain_payload => false: a job made terminal keeps no payload
                   payload = case
                       when c.state = 'waiting' and pc.bad_parent is not null and c.after_policy = 'cancel'
                            and (select t.retain_payload from brooq.topic t where t.name = c.topic) is false
                           then 'null'::jsonb
                       else c.payload
                   end,
                   updated_at = case when c.state = 'waiting' then v_now else c.updated_at end
              from per_child pc
             where c.id = pc.child
               and (c.state = 'waiting' or c.state = 'canceled' and c.parents_left > 0)
            returning c.id, c.topic, c.state, c.has_children, pc.was = 'waiting' as moved
        )
        select array_agg(distinct ch.topic) filter (where ch.state = 'pending'),
               array_agg(ch.id) filter (where ch.state = 'canceled' and ch.moved),
               array_agg(ch.id) filter (where ch.state = 'canceled' and ch.moved and ch.has_children),
               count(*) filter (where ch.moved)
          into v_ready_topics, v_canceled, v_parents, v_n
          from changed ch;

        v_changed := v_changed + v_n;
        if v_ready_topics is not null then
            perform pg_notify('brooq', t.name) from brooq.topic t
             where t.name = any(v_ready_topics) and t.notify;
        end if;
        if v_canceled is not null and exists (select from brooq.job_watch) then
            perform pg_notify('brooq_settled', w.job_id::text)
               from (select distinct w.job_id from brooq.job_watch w
                      where w.job_id = any(v_canceled)) as w;
        end if;
        v_states := array_fill('canceled'::text, array[coalesce(cardinality(v_parents), 0)]);
    end loop;
    return v_changed;
end
$$;

comment on function brooq._release(bigint[], text[]) is
'Private: count the end of each parent (just made terminal) in its waiting children: pending when none is left, canceled at once by a dead or canceled parent under after_policy cancel, transitively (settle_many, cancel, reap, flush).';

revoke all on function brooq._release(bigint[], text[]) from public;

-- brooq._rearm(parents) -> integer, the children it made wait again
--
-- Workflows, re-drive (brooq.retry and retry_dead with rearm_children => true): the
-- inverse of _release's cancel. `parents` were just re-driven (pending or waiting
-- again, in the caller's transaction). Each child that a parent's end canceled
-- (canceled_by = that parent, after_policy cancel) counts that parent as not finished
-- again: the edge is unsettled and parents_left goes up by one. It waits again
-- unless another of its parents is dead or canceled now: then it stays canceled, in
-- that parent's name (last_error, canceled_by), to be re-armed with it. Then the same
-- for the children it made wait that have children (transitively: a descendant
-- canceled by a canceled ancestor). A child that ran or was canceled by hand is never
-- touched; a child under after_policy run was never canceled by its parent.
--
-- Parameters:
--   parents  the ids of the jobs just re-driven
-- Touches: updates brooq.job_edge (settled) and the children's rows of brooq.job.
create or replace function brooq._rearm(parents bigint[])
returns integer
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
    v_now timestamptz := brooq._now();
    v_parents bigint[] := _rearm.parents;
    v_count integer := 0;
    v_n integer;
begin
    while coalesce(cardinality(v_parents), 0) > 0 loop
        -- the children, locked in id order, as _release locks them
        perform from brooq.job c
         where c.id in (select e.child from brooq.job_edge e where e.parent = any(v_parents))
           and c.canceled_by = any(v_parents) and c.state = 'canceled'
         order by c.id
           for no key update of c;

        with armed as (
            select c.id, c.canceled_by as parent
              from brooq.job_edge e
              join brooq.job c on c.id = e.child and c.canceled_by = e.parent
             where e.parent = any(v_parents) and c.state = 'canceled'
        ), unsettled as (
            update brooq.job_edge e
               set settled = false
              from armed a
             where e.parent = a.parent and e.child = a.id and e.settled
            returning e.child
        ), other as (
            -- another parent of the child that is dead or canceled now
            select a.id, min(p.id) as parent,
                   (array_agg(p.state order by p.id))[1] as state
              from armed a
              join brooq.job_edge e on e.child = a.id and e.parent <> a.parent
              join brooq.job p on p.id = e.parent
             where p.state in ('dead', 'canceled')
             group by a.id
        ), changed as (
            update brooq.job c
               set parents_left = c.parents_left + (select count(*)::integer from unsettled u where u.child = c.id),
                   state = case when o.id is null then 'waiting' else 'canceled' end,
                   canceled_by = o.parent,
                   last_error = case
                       when o.id is null
                           then format('re-armed: parent job %s re-driven by %s at %s; before: %s',
                                       a.parent, session_user::text, v_now, left(c.last_error, 2000))
                       else format('parent job %s ended %s (after_policy cancel)', o.parent, o.state)
                   end,
                   updated_at = v_now
              from armed a
              left join other o on o.id = a.id
             where c.id = a.id
            returning c.id, c.state, c.has_children
        )
        select count(*) filter (where ch.state = 'waiting'),
               array_agg(ch.id) filter (where ch.state = 'waiting' and ch.has_children)
          into v_n, v_parents
          from changed ch;
        v_count := v_count + v_n;
    end loop;
    return v_count;
end
$$;

comment on function brooq._rearm(bigint[]) is
'Private: the children that the ends of these re-driven parents canceled wait for them again (retry with rearm_children), transitively; returns how many.';

revoke all on function brooq._rearm(bigint[]) from public;
