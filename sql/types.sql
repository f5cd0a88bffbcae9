-- The named row types that brooq functions return.

-- brooq.enqueue / brooq.enqueue_many: the job's id, and whether this call created
-- it (false: a job with the same (topic, idempotency_key) already existed).
create type brooq.enqueued as (
    id      bigint,
    created boolean
);

-- brooq.claim: a job now held by the caller. attempt counts this claim;
-- lease_token must be handed back to settle and heartbeat. execution_deadline and
-- execution_left: when the topic's max_execution runs out for this job, and the
-- time left at the claim (NULL: no max_execution; types_claimed_job_add_execution).
-- trace_context: the W3C trace context the job was enqueued under
-- (types_claimed_job_add_trace_context). parents: for a job with parents
-- (workflows), a JSON array of them in id order, each {id, topic, state}, never
-- their results (brooq.parents reads those); NULL for a job without parents
-- (types_claimed_job_add_parents).
create type brooq.claimed_job as (
    id           bigint,
    topic        text,
    payload      jsonb,
    attempt      integer,
    max_attempts integer,
    priority     integer,
    lease_token  bigint,
    locked_until timestamptz,
    created_at   timestamptz,
    execution_deadline timestamptz,
    execution_left     interval,
    trace_context      jsonb,
    parents            jsonb
);

-- brooq.settle_many: the state a settled job was left in.
create type brooq.settled as (
    id    bigint,
    state brooq.job_state
);

-- brooq.reap: a job whose lease expired and that was put back to pending.
create type brooq.reaped as (
    id    bigint,
    topic text
);

-- brooq.schedule_maintenance: a pg_cron job it registered.
create type brooq.maintenance_job as (
    job_name text,
    schedule text,
    jobid    bigint
);

comment on type brooq.enqueued is 'Result of enqueue: id, and created = false when the idempotency key already existed.';
comment on type brooq.claimed_job is 'A claimed job: hand lease_token back to settle and heartbeat.';
comment on type brooq.settled is 'Result of settle_many: the new state of each job that was settled.';
comment on type brooq.reaped is 'Result of reap: a job returned to pending after its lease expired.';
comment on type brooq.maintenance_job is 'A pg_cron job registered by brooq.schedule_maintenance.';
