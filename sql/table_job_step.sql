-- brooq.job_step: what a running job finished, one row per (job, step name): durable
-- steps (docs/architecture.md, "Durable steps"). Written by brooq.checkpoint (kind
-- step: the handler's result of the step), brooq.sleep (kind sleep: {"until": the
-- instant the sleep ends}, fixed at its first call) and brooq.wait_for_event (kind
-- event: the payload received, event_id the event's id; kind timeout: none came
-- before the wait's deadline, result NULL). Only the holder of the job's lease
-- writes a row, and only once per name: a retry, or the next holder after a lease
-- loss, reads it back (brooq.steps) instead of running the step again. Kept with
-- the job: purge, flush, drop_topic and a retain_done => false settle delete a
-- job's steps with it; retry keeps them (clear_steps => true clears them).
-- No foreign key to brooq.job: its cascade would cost every delete of a job a
-- probe, jobs without steps included (purge deletes the steps itself).
create table brooq.job_step (
    job_id   bigint      not null,
    name     text        not null,
    kind     text        not null,
    result   jsonb,
    attempt  integer     not null,
    at       timestamptz not null,
    event_id bigint,
    constraint job_step_pkey primary key (job_id, name),
    constraint job_step_kind_known check (kind in ('step', 'sleep', 'event', 'timeout')),
    constraint job_step_name_valid check (name <> '' and length(name) <= 200),
    constraint job_step_event_iff_kind check ((event_id is not null) = (kind = 'event'))
);

comment on table brooq.job_step is
'Durable steps: what a job finished (step results, sleeps, events received, timeouts), one row per step name (private: written by brooq.checkpoint, sleep and wait_for_event; read with brooq.steps).';

revoke all on table brooq.job_step from public;

-- brooq.job_wait: the job that waits for an event (no worker, no lease: the job is
-- pending until deadline), one row per job. Written by brooq.wait_for_event,
-- deleted when the wait ends (the event received, or its timeout recorded) and with
-- the job. brooq.emit_event makes the waiters of its name ready now (event index);
-- brooq._wake_missed, run by brooq.reap, wakes those an emit and a wait that
-- committed at the same time missed (xid: the transaction that registered the wait).
create table brooq.job_wait (
    job_id   bigint      not null,
    step     text        not null,
    event    text        not null,
    since    timestamptz not null,
    deadline timestamptz not null,
    xid      xid8        not null,
    constraint job_wait_pkey primary key (job_id)
);

-- emit_event: the jobs that wait for a name
create index job_wait_event_idx on brooq.job_wait (event);
-- _wake_missed: the waits registered since its last sweep
create index job_wait_xid_idx on brooq.job_wait (xid);

comment on table brooq.job_wait is
'The jobs that wait for an event, until their deadline (private: written by brooq.wait_for_event, read by brooq.emit_event and brooq.reap).';

revoke all on table brooq.job_wait from public;
