-- brooq.retry(job_id, rearm_children, clear_steps) -> boolean
-- brooq.retry_dead(topic, include_canceled, max_jobs, since, rearm_children, clear_steps) -> integer
--
-- Re-drive: put dead (and, when asked, canceled) jobs back to pending, an
-- explicit act of an admin, distinct from any worker's outcome. It is the only
-- way out of a terminal state (invariant 3, docs/architecture.md: the queue never
-- overwrites done, dead or canceled; an admin may re-drive dead and canceled
-- jobs; done is never left). The job keeps its row, its id, its key and its
-- history:
--   state          -> pending, available_at = now (claimable at once)
--   attempts       kept: it still counts every claim of the job (invariant 6)
--   max_attempts   attempts + the topic's max_attempts now: a fresh budget of
--                  attempts on top of the ones spent
--   lease_losses   0 (a poison pill re-driven gets max_lease_losses reaps again)
--   first_claimed_at  NULL: the next claim starts a fresh max_execution budget (a job
--                  that ran out of it would otherwise fail every re-driven attempt)
--   last_error     kept behind a note of the act:
--                    're-driven from dead by alice at ...; before: <last_error>'
--                  (the previous text cut to 2000 characters); the next
--                  outcome replaces it
--   progress       cleared; result, priority, payload, lease_token kept
--   group_seq      of a job of an ordered group: the next number of its group,
--                  drawn under the group's row lock as enqueue does (brooq.job_group),
--                  so the re-driven job runs after the jobs of its group already
--                  queued, never beside one that runs
--   workflows      a canceled child whose parents have not all finished
--                  (parents_left > 0) goes back to waiting, not pending. A
--                  re-driven parent's children that still wait (after_policy run)
--                  wait for its new end. The children its end canceled
--                  (after_policy cancel) stay canceled unless rearm_children =>
--                  true: then they wait again for every parent that has not ended
--                  now, and their descendants canceled with them too
--                  (brooq._rearm); a child that another dead or canceled parent
--                  still cancels stays canceled. Off by default: a re-drive is a
--                  repair of one job, and its children may have been handled since.
--   durable steps  kept (brooq.job_step): the handler runs again from the top and
--                  the steps it finished return at once, so a re-drive after a fix
--                  does not repeat what succeeded (a charge made, an email sent);
--                  clear_steps => true deletes them, so every step runs again. A
--                  wait in progress is forgotten either way (brooq.job_wait): the
--                  handler's wait starts again, with a new deadline.
-- Wakes workers with NOTIFY brooq, payload = topic, like enqueue (unless the
-- topic was declared with notify => false).
--
-- retry(job_id, rearm_children => false, clear_steps => false): a dead or canceled job (naming one job
--   is asking for it).
--   Returns true when this call re-drove it; false when there is nothing to
--   re-drive: the job is pending, failed, processing or done, or no job has this
--   id. False rather than an error, like cancel.
-- retry_dead(topic, include_canceled => false, max_jobs => 1000, since => NULL,
--            rearm_children => false, clear_steps => false):
--   the topic's dead jobs (and canceled ones with include_canceled), oldest
--   first (by the time they became terminal), only those that became terminal
--   at or after since when given, at most max_jobs per call; rows another
--   transaction holds are skipped (SKIP LOCKED): call again until it returns 0.
--   Returns how many jobs it re-drove.
-- Errors:
--   22004 null_value_not_allowed   job_id, topic, include_canceled, max_jobs,
--                                  rearm_children or clear_steps is NULL
--   42704 undefined_object         retry_dead: the topic was not declared
--   22023 invalid_parameter_value  max_jobs not between 1 and 100000
-- Touches (also brooq.job_group, for grouped jobs): updates rows of brooq.job (one for retry, up to max_jobs for retry_dead);
-- deletes their rows of brooq.job_wait (and of brooq.job_step with clear_steps).
create or replace function brooq._retry(job_ids bigint[], from_states text[], rearm_children boolean,
                                        clear_steps boolean)
returns integer
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
    v_now timestamptz := brooq._now();
    v_count integer;
    v_topics text[];
    v_grouped bigint[];  -- the grouped jobs to re-drive ...
    v_seqs bigint[];     -- ... and their new group_seq
    v_parents bigint[];  -- the re-driven jobs that have children
begin
    -- Ordered groups: a re-driven job goes to the end of its group, numbered under
    -- the group's row lock as an enqueue is (see brooq.job_group, brooq.claim): its
    -- old number may be below jobs of the group that ran or run now, and claim
    -- would take it beside them.
    with grouped as (
        select j.id, j.topic, j.group_key,
               row_number() over (partition by j.topic, j.group_key order by j.id) as nth,
               count(*) over (partition by j.topic, j.group_key) as n
          from brooq.job j
         where j.id = any(_retry.job_ids)
           and j.state = any(_retry.from_states)
           and j.state in ('dead', 'canceled')
           and j.group_key is not null
    ), given as (
        insert into brooq.job_group as g (topic, group_key, last_seq)
        select distinct on (x.topic, x.group_key) x.topic, x.group_key, x.n
          from grouped x
         order by x.topic, x.group_key
        on conflict on constraint job_group_pkey do update set last_seq = g.last_seq + excluded.last_seq
        returning g.topic, g.group_key, g.last_seq
    )
    select array_agg(x.id), array_agg(gv.last_seq - x.n + x.nth)
      into v_grouped, v_seqs
      from grouped x
      join given gv on gv.topic = x.topic and gv.group_key = x.group_key;

    with redriven as (
        update brooq.job j
           -- workflows: a canceled child with parents still to finish waits again
           set state = case when j.parents_left > 0 then 'waiting' else 'pending' end,
               available_at = v_now,
               max_attempts = least(j.attempts::bigint
                                    + coalesce((select t.max_attempts from brooq.topic t where t.name = j.topic), 5),
                                    2147483647)::integer,
               lease_losses = 0,
               first_claimed_at = null,
               group_seq = coalesce((select m.seq from unnest(v_grouped, v_seqs) as m(id, seq) where m.id = j.id),
                                    j.group_seq),
               progress = null,
               canceled_by = null,
               last_error = format('re-driven from %s by %s at %s; before: %s', j.state, session_user::text, v_now,
                                   coalesce(left(j.last_error, 2000), 'no error')),
               updated_at = v_now
         where j.id = any(_retry.job_ids)
           and j.state = any(_retry.from_states)
           and j.state in ('dead', 'canceled')
        returning j.id, j.topic, exists (select from brooq.job_edge e where e.parent = j.id) as parent
    ), waits as (
        -- durable steps: a wait in progress starts again; the steps are kept unless asked
        delete from brooq.job_wait w using redriven r where w.job_id = r.id
    ), steps as (
        delete from brooq.job_step s using redriven r where _retry.clear_steps and s.job_id = r.id
    )
    select count(*), array_agg(distinct r.topic), array_agg(r.id) filter (where r.parent)
      into v_count, v_topics, v_parents
      from redriven r;
    if v_parents is not null then
        perform brooq._rearm(v_parents, _retry.rearm_children);
    end if;
    perform pg_notify('brooq', t.name)
       from brooq.topic t
      where t.name = any(v_topics) and t.notify;
    return v_count;
end
$$;

create or replace function brooq.retry(job_id bigint, rearm_children boolean default false,
                                       clear_steps boolean default false)
returns boolean
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
begin
    if retry.job_id is null or retry.rearm_children is null or retry.clear_steps is null then
        raise exception 'brooq.retry: job_id, rearm_children and clear_steps must not be NULL'
            using errcode = 'null_value_not_allowed',
                  hint = 'Pass the id of a dead or canceled job; leave rearm_children and clear_steps out for false.';
    end if;
    return brooq._retry(array[retry.job_id], array['dead', 'canceled'], retry.rearm_children,
                        retry.clear_steps) = 1;
end
$$;

create or replace function brooq.retry_dead(
    topic text,
    include_canceled boolean default false,
    max_jobs integer default 1000,
    since timestamptz default null,
    rearm_children boolean default false,
    clear_steps boolean default false)
returns integer
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_states text[];
begin
    if retry_dead.topic is null or retry_dead.include_canceled is null or retry_dead.max_jobs is null
        or retry_dead.rearm_children is null or retry_dead.clear_steps is null then
        raise exception 'brooq.retry_dead: topic, include_canceled, max_jobs, rearm_children and clear_steps must not be NULL'
            using errcode = 'null_value_not_allowed',
                  hint = 'Name a topic; leave include_canceled, max_jobs, rearm_children and clear_steps out for their defaults (false, 1000, false, false).';
    end if;
    if not exists (select from brooq.topic t where t.name = retry_dead.topic) then
        raise exception 'topic "%" does not exist', left(retry_dead.topic, 200)
            using errcode = 'undefined_object',
                  hint = 'Name a declared topic: select topic from brooq.topic_stats.';
    end if;
    if retry_dead.max_jobs not between 1 and 100000 then
        raise exception 'invalid max_jobs %', retry_dead.max_jobs
            using errcode = 'invalid_parameter_value',
                  hint = 'max_jobs must be between 1 and 100000.';
    end if;
    v_states := case when retry_dead.include_canceled then array['dead', 'canceled'] else array['dead'] end;
    return brooq._retry(array(
        select j.id
          from brooq.job j
         where j.topic = retry_dead.topic
           and j.state = any(v_states)
           and (retry_dead.since is null or j.updated_at >= retry_dead.since)
         order by j.updated_at, j.id
         limit retry_dead.max_jobs
           for no key update skip locked), v_states, retry_dead.rearm_children, retry_dead.clear_steps);
end
$$;

comment on function brooq._retry(bigint[], text[], boolean, boolean) is
'Private: re-drive the listed jobs that are in one of from_states (dead or canceled) to pending; returns how many.';
comment on function brooq.retry(bigint, boolean, boolean) is
'Re-drive a dead or canceled job to pending (an admin act: attempts kept, a fresh budget of max_attempts, last_error noted, its durable steps kept unless clear_steps), and with rearm_children the children its end canceled; true if re-driven, false otherwise. Errors: 22004 NULL argument.';
comment on function brooq.retry_dead(text, boolean, integer, timestamptz, boolean, boolean) is
'Re-drive up to max_jobs dead (and canceled, if asked) jobs of a topic, oldest first; returns how many. Errors: 22004 NULL argument, 42704 unknown topic, 22023 bad max_jobs.';

revoke all on function brooq._retry(bigint[], text[], boolean, boolean) from public;
revoke all on function brooq.retry(bigint, boolean, boolean) from public;
revoke all on function brooq.retry_dead(text, boolean, integer, timestamptz, boolean, boolean) from public;
grant execute on function brooq.retry(bigint, boolean, boolean) to brooq_admin;
grant execute on function brooq.retry_dead(text, boolean, integer, timestamptz, boolean, boolean) to brooq_admin;
