-- brooq.parents(job_id) -> setof brooq.parent_job, in parent id order
--
-- Workflows (docs/architecture.md, "Workflows"): the parents of a job, each with
-- its state and outcome, in one query: a child's handler reads its parents'
-- results with this call, not one query per parent. A parent that was flushed (or
-- deleted by its owner) is missing; purge keeps a parent until its children have
-- finished. No rows for a job without parents, or an unknown id.
--
-- Parameters:
--   job_id  the child's id
-- Returns: (id, topic, state, result, last_error, updated_at) per parent; result
-- is set for a done parent (NULL if its topic keeps no results), last_error says
-- why a dead or canceled one ended.
-- Errors:
--   22004 null_value_not_allowed  job_id is NULL
-- Touches: reads brooq.job_edge (child, parent) and the parents' rows of brooq.job.
create type brooq.parent_job as (
    id          bigint,
    topic       text,
    state       brooq.job_state,
    result      jsonb,
    last_error  text,
    updated_at  timestamptz
);

comment on type brooq.parent_job is
'Result of parents: a parent of a job, its state and outcome.';

create or replace function brooq.parents(job_id bigint)
returns setof brooq.parent_job
language plpgsql
stable
security definer
set search_path = pg_catalog, pg_temp
as $$
begin
    if parents.job_id is null then
        raise exception 'brooq.parents: job_id must not be NULL'
            using errcode = 'null_value_not_allowed',
                  hint = 'Pass the id of the job whose parents you want.';
    end if;
    return query
    select p.id, p.topic, p.state, p.result, p.last_error, p.updated_at
      from brooq.job_edge e
      join brooq.job p on p.id = e.parent
     where e.child = parents.job_id
     order by p.id;
end
$$;

comment on function brooq.parents(bigint) is
'A job''s parents (workflows), with their state and result, in one query. Errors: 22004 NULL id.';

revoke all on function brooq.parents(bigint) from public;
grant execute on function brooq.parents(bigint) to brooq_producer, brooq_worker;

-- brooq._job_parents (child, parents): what brooq.claim hands a job with parents
--
-- Per child, its parents' ids, topics and states as one JSON array in parent id
-- order: [{id, topic, state}, ...]; no row for a job with none left in the table.
-- Never their results: a claim must not fail, nor grow without bound, because of
-- what one job's parents returned (10,000 parents of 1 MB results would pass
-- jsonb's limit and fail every claim of the topic); a handler reads results on
-- request with brooq.parents, a row per parent. Bounded: at most 10,000 parents of
-- a job, each entry under 200 bytes. Private: claim reads it, as a subquery on
-- child, for the jobs it claims that have parents (after_policy is not null). A
-- view, not a function: the planner pushes `child = ...` below the aggregate and
-- runs it inside the claim's own statement (a function call per claimed job cost
-- about 6 us, a quarter of the time of a claim of 100 children of one parent).
create view brooq._job_parents as
    select e.child,
           jsonb_agg(jsonb_build_object('id', p.id, 'topic', p.topic, 'state', p.state)
                     order by p.id) as parents
      from brooq.job_edge e
      join brooq.job p on p.id = e.parent
     group by e.child;

comment on view brooq._job_parents is
'Private: per child, its parents'' ids, topics and states as one JSON array (id order), what brooq.claim hands a job with parents; never their results.';

revoke all on brooq._job_parents from public;

-- brooq.children(job_id, max_rows) -> setof brooq.child_job, in child id order
--
-- Workflows: the jobs that wait (or waited) for a job, each with its state and the
-- number of its parents not finished yet: what a parent's end released, canceled,
-- or still holds. At most max_rows of them, the lowest ids first (a fan-out may have
-- thousands: ask for max_rows + 1 to learn whether there are more). No rows for a
-- job without children, or an unknown id.
--
-- Parameters:
--   job_id    the parent's id
--   max_rows  1 to 10000 (default 100)
-- Returns: (id, topic, state, parents_left, after_policy, last_error, updated_at)
-- per child.
-- Errors:
--   22004 null_value_not_allowed   a NULL argument
--   22023 invalid_parameter_value  max_rows out of range
-- Touches: reads brooq.job_edge (parent, child) and the children's rows of brooq.job.
create type brooq.child_job as (
    id           bigint,
    topic        text,
    state        brooq.job_state,
    parents_left integer,
    after_policy text,
    last_error   text,
    updated_at   timestamptz
);

comment on type brooq.child_job is
'Result of children: a job that waits (or waited) for a job, its state and the parents it still waits for.';

create or replace function brooq.children(job_id bigint, max_rows integer default 100)
returns setof brooq.child_job
language plpgsql
stable
security definer
set search_path = pg_catalog, pg_temp
as $$
begin
    if children.job_id is null or children.max_rows is null then
        raise exception 'brooq.children: arguments must not be NULL'
            using errcode = 'null_value_not_allowed',
                  hint = 'Pass the id of the job whose children you want; leave max_rows out for 100.';
    end if;
    if children.max_rows not between 1 and 10000 then
        raise exception 'invalid max_rows %', children.max_rows
            using errcode = 'invalid_parameter_value',
                  hint = 'max_rows must be between 1 and 10000.';
    end if;
    return query
    select c.id, c.topic, c.state, c.parents_left, c.after_policy, c.last_error, c.updated_at
      from brooq.job_edge e
      join brooq.job c on c.id = e.child
     where e.parent = children.job_id
     order by e.child
     limit children.max_rows;
end
$$;

comment on function brooq.children(bigint, integer) is
'The jobs that wait (or waited) for a job (workflows), with their state and parents left, lowest ids first, at most max_rows. Errors: 22004 NULL argument, 22023 max_rows out of range.';

revoke all on function brooq.children(bigint, integer) from public;
grant execute on function brooq.children(bigint, integer) to brooq_producer, brooq_worker;
