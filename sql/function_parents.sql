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
