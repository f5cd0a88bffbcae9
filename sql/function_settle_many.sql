-- brooq.settle_many(worker, job_ids, lease_tokens, outcomes, errors, delays, results)
--   -> setof brooq.settled
--
-- Writes the outcome of many claimed jobs in one statement: the fast path for
-- workers. Arrays are parallel: element i of each belongs to job_ids[i].
-- Each write is fenced by the claim itself: state = 'processing', locked_by =
-- worker and lease_token = the token that claim returned. A job whose lease was
-- lost (canceled, reaped, claimed again, or already settled by this very call
-- repeated) is left untouched and missing from the result: that is a normal
-- answer, not an error, so the caller's own writes in the same transaction stay.
--
-- Outcomes:
--   done      -> done; result stored (at most the topic's max_payload_bytes, the
--                bytes of its JSON text). last_error keeps the previous failure, if any.
--   failed    -> failed, retried after the topic's backoff for this attempt;
--                dead if this was the last attempt (attempts >= max_attempts).
--   delay     -> failed, retried after least(delay, backoff_max); dead on the last
--                attempt all the same.
--   preserve  -> failed, the charged attempt is given back (attempts - 1), retried
--                after least(coalesce(delay, backoff_base), backoff_max); never dead.
--   cancel    -> canceled.
--   dead      -> dead at once, whatever attempts are left: the handler's verdict
--                that no attempt can succeed (a payload that does not fit its
--                type). A recorded failure: its error is required (non-empty; it
--                becomes last_error, the cause), attempts stay as claim charged them.
-- Retention policies of the job's topic (brooq.declare_topic):
--   retain_done => false     a job settled done is deleted by this very call
--                            (reported as done all the same; its result is not
--                            stored; its steps, brooq.job_step, go with it); a job somebody watches (brooq.watch) is
--                            kept, so its waiter reads its fate; so is a job
--                            with children (workflows), for their handlers, and
--                            one a producer enqueueing a child of it holds.
--   retain_payload => false  the payload becomes 'null'::jsonb when the job becomes
--                            terminal (done, dead, canceled), by any outcome.
-- Every outcome clears the lease and resets lease_losses to 0 (the handler ran to
-- an outcome, so the job is no poison pill; see brooq.reap); errors[i], when given,
-- becomes last_error (cut to 2000 characters).
-- A watched job (brooq.watch) made terminal is announced with NOTIFY
-- brooq_settled, its id as payload.
-- Workflows: a job made terminal that has children (an edge in brooq.job_edge) is
-- handed to brooq._release in this transaction: its waiting children become pending
-- when it was their last parent, or canceled by its dead or canceled end
-- (after_policy).
--
-- Parameters:
--   worker        the name given to claim
--   job_ids       bigint[], no NULLs, no duplicates, at most 10,000
--   lease_tokens  bigint[], the lease_token of each job's claim
--   outcomes      text[], one of done, failed, delay, preserve, cancel, dead
--   errors        text[] or NULL; required (non-empty) where the outcome is dead
--   delays        interval[] or NULL; required (>= 0) where the outcome is delay
--   results       jsonb[] or NULL; stored for done
--
-- Returns: (id, new state) for each job that was settled; in no set order.
-- Errors:
--   22004 null_value_not_allowed   worker or a required array or element is NULL
--   22023 invalid_parameter_value  arrays of different lengths or of more than one
--                                  dimension, duplicate ids,
--                                  an unknown outcome, a missing or negative delay,
--                                  dead without an error
--   54000 program_limit_exceeded   more than 10,000 jobs; a result larger than its
--                                  topic's max_payload_bytes (nothing is written)
-- Touches: updates (or, retain_done => false, deletes) up to cardinality(job_ids)
-- rows of brooq.job; through brooq._release, the edges and waiting children of
-- the jobs it made terminal that have children.
create or replace function brooq.settle_many(
    worker text,
    job_ids bigint[],
    lease_tokens bigint[],
    outcomes text[],
    errors text[] default null,
    delays interval[] default null,
    results jsonb[] default null)
returns setof brooq.settled
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
set plan_cache_mode = force_generic_plan  -- see docs/performance.md, "Generic plans"
set enable_seqscan = off  -- with brooq._settle_rows: a plan made on a near-empty table probes job_pkey
set jit = off  -- enable_seqscan = off prices a scan of brooq.topic above jit_above_cost
as $$
declare
    v_now timestamptz := brooq._now();
    v_n integer := coalesce(cardinality(settle_many.job_ids), 0);
    v_bad record;
    v_dropped integer := 0;
    v_edges boolean;
    v_gone bigint[];       -- the jobs deleted as done (retain_done => false)
    v_rows brooq.settled[];
    v_parents bigint[];    -- jobs made terminal that have children (workflows)
    v_ends text[];
begin
    if settle_many.worker is null or settle_many.job_ids is null
        or settle_many.lease_tokens is null or settle_many.outcomes is null then
        raise exception 'brooq.settle_many: worker, job_ids, lease_tokens and outcomes must not be NULL'
            using errcode = 'null_value_not_allowed',
                  hint = 'Pass one element per job in job_ids, lease_tokens and outcomes (empty arrays for none).';
    end if;
    if array_ndims(settle_many.job_ids) > 1 or array_ndims(settle_many.lease_tokens) > 1
        or array_ndims(settle_many.outcomes) > 1 or array_ndims(settle_many.errors) > 1
        or array_ndims(settle_many.delays) > 1 or array_ndims(settle_many.results) > 1 then
        raise exception 'brooq.settle_many: job_ids, lease_tokens, outcomes, errors, delays and results must be one-dimensional arrays'
            using errcode = 'invalid_parameter_value',
                  hint = 'Pass array[id, ...], one element per job, and the other arrays in the same order.';
    end if;
    if coalesce(cardinality(settle_many.lease_tokens), 0) <> v_n
        or coalesce(cardinality(settle_many.outcomes), 0) <> v_n
        or coalesce(cardinality(settle_many.errors), v_n) <> v_n
        or coalesce(cardinality(settle_many.delays), v_n) <> v_n
        or coalesce(cardinality(settle_many.results), v_n) <> v_n then
        raise exception 'brooq.settle_many: arrays of different lengths (% job ids)', v_n
            using errcode = 'invalid_parameter_value',
                  hint = 'Give one lease_token, outcome (and error, delay, result when given) per job id.';
    end if;

    if v_n > 10000 then
        raise exception 'brooq.settle_many: % jobs in one call, more than 10000', v_n
            using errcode = 'program_limit_exceeded',
                  hint = 'Settle at most 10000 jobs per call.';
    end if;

    select u.ord, u.id, u.token, u.outcome, u.delay, u.error,
           count(*) over (partition by u.id) as copies
      into v_bad
      from unnest(settle_many.job_ids, settle_many.lease_tokens, settle_many.outcomes, settle_many.delays,
                  settle_many.errors)
           with ordinality as u(id, token, outcome, delay, error, ord)
     order by (u.id is null or u.token is null or u.outcome is null) desc,
              (u.outcome not in ('done', 'failed', 'delay', 'preserve', 'cancel', 'dead')) is true desc,
              (u.outcome = 'delay' and u.delay is null or u.delay < interval '0') is true desc,
              (u.outcome = 'dead' and coalesce(btrim(u.error), '') = '') is true desc,
              copies desc
     limit 1;
    if v_n > 0 and (v_bad.id is null or v_bad.token is null or v_bad.outcome is null) then
        raise exception 'brooq.settle_many: element % has a NULL job id, lease token or outcome', v_bad.ord
            using errcode = 'null_value_not_allowed',
                  hint = 'Give each job its id, the lease_token that claim returned, and an outcome.';
    elsif v_n > 0 and v_bad.outcome not in ('done', 'failed', 'delay', 'preserve', 'cancel', 'dead') then
        raise exception 'unknown outcome "%" for job %', left(v_bad.outcome, 40), v_bad.id
            using errcode = 'invalid_parameter_value',
                  hint = 'The outcome is one of done, failed, delay, preserve, cancel, dead.';
    elsif v_n > 0 and (v_bad.outcome = 'delay' and v_bad.delay is null or v_bad.delay < interval '0') is true then
        raise exception 'invalid delay % for job %', coalesce(v_bad.delay::text, 'NULL'), v_bad.id
            using errcode = 'invalid_parameter_value',
                  hint = 'The outcome delay needs a delay of zero or more, e.g. ''30 seconds''.';
    elsif v_n > 0 and (v_bad.outcome = 'dead' and coalesce(btrim(v_bad.error), '') = '') is true then
        raise exception 'outcome dead without an error for job %', v_bad.id
            using errcode = 'invalid_parameter_value',
                  hint = 'The outcome dead records why no attempt can succeed: give its error, e.g. ''payload does not fit Order: id: missing''.';
    elsif v_n > 0 and v_bad.copies > 1 then
        raise exception 'job % appears % times in one settle_many call', v_bad.id, v_bad.copies
            using errcode = 'invalid_parameter_value',
                  hint = 'Settle each job once per call.';
    end if;

    -- A topic declared with retain_done => false (none, as a rule: one probe of
    -- brooq.topic tells): the jobs of such a topic settled done are deleted first,
    -- unless somebody watches one (brooq.watch: it is updated, so its waiter reads
    -- its fate). Their results are not stored, so not checked against
    -- max_payload_bytes. The update below, a statement of its own, no longer sees
    -- them, and is skipped when nothing is left (a drain of such a topic).
    -- Workflows: an edge in the table (none, without workflows: one probe per call)
    v_edges := exists (select from brooq.job_edge);
    if exists (select from brooq.topic t where not t.retain_done) then
        -- SKIP LOCKED: a row another transaction holds (a producer enqueueing a
        -- child of it holds FOR KEY SHARE) is not waited for; it is kept, settled
        -- by the update below. The rows locked are deleted by ctid (a TID scan, no
        -- second probe of job_pkey).
        with gone as (
        delete from brooq.job j
         where j.ctid = any (array(
                select d.ctid
                  from brooq.job d,
                       brooq._settle_rows(settle_many.job_ids, settle_many.lease_tokens, settle_many.outcomes,
                                          settle_many.errors, settle_many.delays, settle_many.results) as u,
                       brooq.topic t
                 where d.id = u.id
                   and d.state = 'processing'
                   and d.locked_by = settle_many.worker
                   and d.lease_token = u.token
                   and t.name = d.topic
                   and u.outcome = 'done' and not t.retain_done
                   -- a parent is kept for its children's handlers (purge deletes it later)
                   and not (v_edges and exists (select from brooq.job_edge e where e.parent = d.id))
                   and not exists (select from brooq.job_watch w where w.job_id = d.id)
                   for update of d skip locked))
        returning j.id
        )
        select array_agg(g.id) into v_gone from gone g;
        v_dropped := coalesce(cardinality(v_gone), 0);
        return query select g.id, 'done'::brooq.job_state from unnest(v_gone) as g(id);
        -- Durable steps: a job deleted takes its steps and wait along (no step in the
        -- table, as a rule: one probe of an empty table)
        if v_dropped > 0 and exists (select from brooq.job_step) then
            delete from brooq.job_step s where s.job_id = any(v_gone);
            delete from brooq.job_wait w where w.job_id = any(v_gone);
        end if;
        -- A child whose enqueue committed after this statement's snapshot and before
        -- its lock (the producer's key-share lock gone, so the row was not skipped)
        -- named a parent deleted here; its enqueue noted it in brooq.job_edge_check.
        -- A later statement sees its edge: that parent ended done.
        if v_dropped > 0 and exists (select from brooq.job_edge_check) then
            select array_agg(distinct e.parent) into v_parents
              from brooq.job_edge e
             where e.parent = any(v_gone) and not e.settled;
            if v_parents is not null then
                perform brooq._release(v_parents, array_fill('done'::text, array[cardinality(v_parents)]));
            end if;
            v_parents := null;
        end if;
    end if;
    if v_dropped < v_n then
        -- The rows are collected, so that the jobs made terminal that have children
        -- (an edge names them) are known: with no edge in the table (no workflow),
        -- none per job.
        with settled as (
        update brooq.job j
           set state = case
                   when u.outcome = 'done' then 'done'
                   when u.outcome = 'cancel' then 'canceled'
                   when u.outcome = 'preserve' then 'failed'
                   when u.outcome = 'dead' then 'dead'
                   when j.attempts >= j.max_attempts then 'dead'
                   else 'failed'
               end,
               attempts = case when u.outcome = 'preserve' then greatest(j.attempts - 1, 0) else j.attempts end,
               available_at = case
                   when u.outcome = 'failed' then v_now + brooq._backoff(t.backoff_base, t.backoff_max, j.attempts)
                   when u.outcome = 'delay' then v_now + least(u.delay, t.backoff_max)
                   when u.outcome = 'preserve' then v_now + least(coalesce(u.delay, t.backoff_base), t.backoff_max)
                   else j.available_at
               end,
               result = case
                   when u.outcome <> 'done' then j.result
                   when octet_length(u.result::text) > t.max_payload_bytes
                       then brooq._result_too_large(j.id, octet_length(u.result::text), t.max_payload_bytes, t.name)
                   else u.result
               end,
               -- retain_payload => false: the payload goes as the job becomes terminal
               payload = case
                   when t.retain_payload then j.payload
                   when u.outcome in ('done', 'cancel', 'dead')
                     or u.outcome in ('failed', 'delay') and j.attempts >= j.max_attempts then 'null'::jsonb
                   else j.payload
               end,
               last_error = coalesce(left(u.error, 2000), j.last_error),
               lease_losses = 0,
               locked_by = null,
               locked_until = null,
               updated_at = v_now
          from brooq._settle_rows(settle_many.job_ids, settle_many.lease_tokens, settle_many.outcomes,
                                  settle_many.errors, settle_many.delays, settle_many.results) as u,
               brooq.topic t
         where j.id = u.id
           and j.state = 'processing'
           and j.locked_by = settle_many.worker
           and j.lease_token = u.token
           and t.name = j.topic
        returning j.id, j.state,
                  v_edges and j.state in ('done', 'dead', 'canceled')
                  and exists (select from brooq.job_edge e where e.parent = j.id) as parent
        )
        select coalesce(array_agg(row(s.id, s.state)::brooq.settled), '{}'),
               array_agg(s.id) filter (where s.parent),
               array_agg(s.state::text) filter (where s.parent)
          into v_rows, v_parents, v_ends
          from settled s;
        return query select * from unnest(v_rows);
        -- Workflows: their waiting children, in this transaction (docs/architecture.md).
        if v_parents is not null then
            perform brooq._release(v_parents, v_ends);
        end if;
    end if;

    -- Wake brooq.wait's waiters of the jobs this call made terminal (none watching,
    -- the usual case: one probe of an empty table, and no NOTIFY).
    if exists (select from brooq.job_watch) then
        perform pg_notify('brooq_settled', w.job_id::text)
           from (select distinct w.job_id
                   from brooq.job_watch w
                   join brooq.job j on j.id = w.job_id
                  where w.job_id = any(settle_many.job_ids)
                    and j.state in ('done', 'dead', 'canceled')) as w;
    end if;
end
$$;

comment on function brooq.settle_many(text, bigint[], bigint[], text[], text[], interval[], jsonb[]) is
'Settle many claimed jobs in one statement (outcomes done, failed, delay, preserve, cancel, dead), fenced by worker and lease_token; jobs whose lease was lost are skipped. dead makes a job dead at once, its error (required) recorded. Errors: 22004 NULL argument, 22023 bad arrays or outcome (dead without an error), 54000 more than 10000 jobs or a result above max_payload_bytes.';

revoke all on function brooq.settle_many(text, bigint[], bigint[], text[], text[], interval[], jsonb[]) from public;
grant execute on function brooq.settle_many(text, bigint[], bigint[], text[], text[], interval[], jsonb[]) to brooq_worker;
