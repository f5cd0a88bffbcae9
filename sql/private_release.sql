-- brooq._release(parents, states) -> integer, the children it made pending or canceled
--
-- Workflows (docs/architecture.md, "Workflows"): counts the end of each parent
-- (just made terminal by the caller, in the caller's transaction) in its children,
-- once per (parent, child) edge. Every function that makes a job with children (an
-- edge names it as parent) terminal calls it with those jobs and the state each
-- ended in: settle_many (and so settle), cancel, reap, flush and drop_topic (a
-- deleted parent counts as canceled), and _release_missed (the ends a settle could
-- not see).
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
set enable_seqscan = off  -- probe job_pkey and the edges' indexes whoever calls (cancel, reap, retry, flush)
set jit = off  -- enable_seqscan = off can price a plan above jit_above_cost
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
            returning c.id, c.topic, c.state, pc.was = 'waiting' as moved
        )
        select array_agg(distinct ch.topic) filter (where ch.state = 'pending'),
               array_agg(ch.id) filter (where ch.state = 'canceled' and ch.moved),
               array_agg(ch.id) filter (where ch.state = 'canceled' and ch.moved
                                          and exists (select from brooq.job_edge g where g.parent = ch.id)),
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

-- brooq._release_missed(max_children) -> integer, the children it made pending or canceled
--
-- Workflows: the ends a settle could not see. A child's enqueue locks its parents
-- FOR KEY SHARE only, so a worker never waits for a producer's transaction; but a
-- parent settled (canceled, reaped) before that transaction committed was settled
-- by a statement that could not see the child's edge, and its end was not counted.
-- Such a child is in brooq.job_edge_check. This takes up to max_children of them,
-- the least recently looked at first (SKIP LOCKED: reapers share them), hands the
-- parents that have ended (or are gone: counted as canceled, as flush counts them)
-- with an unsettled edge to them to brooq._release, forgets the children with no
-- unsettled edge left and notes when the others were looked at. Called by
-- brooq.reap; the wait it adds is a reap interval, and only after such a race.
--
-- Touches: brooq.job_edge_check; through brooq._release, edges and children.
create or replace function brooq._release_missed(max_children integer)
returns integer
language plpgsql
set search_path = pg_catalog, pg_temp
set enable_seqscan = off  -- probe job_pkey and the edges' indexes whoever calls (cancel, reap, retry, flush)
set jit = off  -- enable_seqscan = off can price a plan above jit_above_cost
as $$
declare
    v_children bigint[];
    v_parents bigint[];
    v_states text[];
    v_n integer := 0;
begin
    select array_agg(c.child) into v_children
      from (select c.child from brooq.job_edge_check c
             order by c.checked_at nulls first, c.child
             limit _release_missed.max_children
               for update skip locked) as c;
    if v_children is null then
        return 0;
    end if;
    select array_agg(x.parent order by x.parent), array_agg(x.state order by x.parent)
      into v_parents, v_states
      from (select distinct e.parent, coalesce(p.state::text, 'canceled') as state
              from brooq.job_edge e
              left join brooq.job p on p.id = e.parent
             where e.child = any(v_children) and not e.settled
               and (p.id is null or p.state in ('done', 'dead', 'canceled'))) as x;
    if v_parents is not null then
        v_n := brooq._release(v_parents, v_states);
    end if;
    delete from brooq.job_edge_check c
     where c.child = any(v_children)
       and not exists (select from brooq.job_edge e where e.child = c.child and not e.settled);
    update brooq.job_edge_check c set checked_at = brooq._now()
     where c.child = any(v_children);
    return v_n;
end
$$;

comment on function brooq._release_missed(integer) is
'Private: count the ends of parents that a settle could not see (a child enqueued in a transaction that committed after it), for up to max_children children of brooq.job_edge_check (reap).';

revoke all on function brooq._release_missed(integer) from public;

-- brooq._rearm(parents, rearm_children) -> integer, the canceled children it made wait again
--
-- Workflows, re-drive (brooq.retry and retry_dead). `parents` were just re-driven
-- (pending or waiting again, in the caller's transaction): their ends are taken back.
--   - A child that still waits (after_policy run, which counted a dead or canceled
--     parent as finished) counts each of these parents as unfinished again: its
--     edge is unsettled and parents_left goes up, whatever rearm_children says,
--     so that it never runs beside a parent that has not ended again, and reads
--     that parent's new end.
--   - With rearm_children, each child that the end of one of these parents canceled
--     (canceled_by) is counted again from the truth: every edge of it settled iff
--     its parent has ended now, parents_left the parents still to end (a parent
--     re-driven earlier, without this child, counts as one), and it waits again
--     unless one of its parents is dead or canceled now: then it stays canceled, in
--     that parent's name (last_error, canceled_by), to be re-armed with it. Then the
--     same for the children of the children it made wait (transitively: a
--     descendant canceled by a canceled ancestor, or one still waiting under run).
-- A child that ran, or was canceled by hand, is never touched.
--
-- Parameters:
--   parents          the ids of the jobs just re-driven that have children
--   rearm_children   re-arm the children their ends canceled, too
-- Touches: updates brooq.job_edge (settled) and the children's rows of brooq.job.
create or replace function brooq._rearm(parents bigint[], rearm_children boolean)
returns integer
language plpgsql
set search_path = pg_catalog, pg_temp
set enable_seqscan = off  -- probe job_pkey and the edges' indexes whoever calls (cancel, reap, retry, flush)
set jit = off  -- enable_seqscan = off can price a plan above jit_above_cost
as $$
declare
    v_now timestamptz := brooq._now();
    v_parents bigint[] := _rearm.parents;
    v_count integer := 0;
    v_n integer;
    v_how text := 're-driven';  -- how the parents came back: re-driven, then (their children) re-armed
begin
    while coalesce(cardinality(v_parents), 0) > 0 loop
        -- the children, locked in id order, as _release locks them
        perform from brooq.job c
         where c.id in (select e.child from brooq.job_edge e where e.parent = any(v_parents))
           and (c.state = 'waiting'
                or _rearm.rearm_children and c.state = 'canceled' and c.canceled_by = any(v_parents))
         order by c.id
           for no key update of c;

        with unsettled as (
            update brooq.job_edge e
               set settled = false
              from brooq.job c
             where e.parent = any(v_parents) and e.settled
               and c.id = e.child and c.state = 'waiting'
            returning e.child
        )
        update brooq.job c
           set parents_left = c.parents_left + u.n,
               updated_at = v_now
          from (select u.child, count(*)::integer as n from unsettled u group by u.child) as u
         where c.id = u.child;

        exit when not _rearm.rearm_children;

        with armed as (
            select c.id, c.canceled_by as parent
              from brooq.job c
             where c.id in (select e.child from brooq.job_edge e where e.parent = any(v_parents))
               and c.state = 'canceled' and c.canceled_by = any(v_parents)
        ), counted as (
            -- every parent of the child as it is now (a purged one keeps its edge as it is)
            select a.id, a.parent,
                   count(*) filter (where p.state not in ('done', 'dead', 'canceled'))::integer as n_left,
                   min(p.id) filter (where p.state in ('dead', 'canceled')) as bad,
                   (array_agg(p.state order by p.id) filter (where p.state in ('dead', 'canceled')))[1] as bad_state
              from armed a
              join brooq.job_edge e on e.child = a.id
              join brooq.job p on p.id = e.parent
             group by a.id, a.parent
        ), recounted as (
            update brooq.job_edge e
               set settled = p.state in ('done', 'dead', 'canceled')
              from armed a, brooq.job p
             where e.child = a.id and p.id = e.parent
               and e.settled <> (p.state in ('done', 'dead', 'canceled'))
        ), changed as (
            update brooq.job c
               set parents_left = k.n_left,
                   state = case when k.bad is null then 'waiting' else 'canceled' end,
                   canceled_by = k.bad,
                   last_error = case
                       when k.bad is null
                           then format('re-armed: parent job %s %s by %s at %s; before: %s',
                                       k.parent, v_how, session_user::text, v_now, left(c.last_error, 2000))
                       else format('parent job %s ended %s (after_policy cancel)', k.bad, k.bad_state)
                   end,
                   updated_at = v_now
              from counted k
             where c.id = k.id
            returning c.id, c.state
        )
        select count(*) filter (where ch.state = 'waiting'),
               array_agg(ch.id) filter (where ch.state = 'waiting'
                                          and exists (select from brooq.job_edge g where g.parent = ch.id))
          into v_n, v_parents
          from changed ch;
        v_count := v_count + v_n;
        v_how := 're-armed';
    end loop;
    return v_count;
end
$$;

comment on function brooq._rearm(bigint[], boolean) is
'Private: take back the ends of these re-driven parents: their waiting children wait for them again; with rearm_children, the children their ends canceled are counted again and wait unless another parent is dead or canceled, transitively (retry, retry_dead); returns how many canceled children wait again.';

revoke all on function brooq._rearm(bigint[], boolean) from public;
