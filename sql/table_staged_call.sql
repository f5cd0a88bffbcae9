-- brooq.staged_call: the bulk enqueues a PL/Proxy router (proxy/, docs/scale-out.md)
-- split over several partitions, as this partition holds its share of each: one row
-- per call id. A call's jobs are inserted unclaimable here (available_at at the
-- marker 9999-12-30, which no claim reaches: claim is unchanged), then the router
-- publishes every partition's share, or discards every share, so that either every
-- job of the call becomes claimable or none ever runs (brooq.enqueue_staged,
-- brooq.decide_staged).
--
-- state:
--   staged     the jobs are here, unclaimable (job_ids, available_at: when they
--              become claimable once published)
--   published  the jobs were made claimable (job_ids cleared)
--   fenced     a resolver (brooq_proxy.resolve on a router) took the call over: a
--              plain publish is refused, only a forced one (a partition of the call is
--              published) or a discard follows
--   discarded  the jobs were deleted, or the call never staged here (a tombstone: a
--              late staging of the same call id is refused)
-- decided_at is set when the state leaves staged. Rows that are published or
-- discarded are forgotten by brooq.forget_staged (a resolver's cleanup).
create table brooq.staged_call (
    call_id      uuid        not null,
    state        text        not null,
    topic        text,
    job_ids      bigint[],
    available_at timestamptz,
    staged_at    timestamptz not null,
    decided_at   timestamptz,
    constraint staged_call_pkey primary key (call_id),
    constraint staged_call_state_known check (state in ('staged', 'published', 'fenced', 'discarded')),
    constraint staged_call_decided_iff_not_staged check ((state = 'staged') = (decided_at is null))
);

-- The calls not yet settled (a resolver lists them; enqueue_staged checks keys against them).
create index staged_call_open_idx on brooq.staged_call (staged_at) where state in ('staged', 'fenced');

comment on table brooq.staged_call is
'Bulk enqueues of a router, this partition''s share of each, until published or discarded (private: written by brooq.enqueue_staged and brooq.decide_staged).';

revoke all on table brooq.staged_call from public;

-- What a resolver reads: every call this partition holds, with how many jobs.
create or replace view brooq.staged_calls as
select s.call_id, s.state, s.topic, coalesce(cardinality(s.job_ids), 0) as jobs,
       s.available_at, s.staged_at, s.decided_at
  from brooq.staged_call s;

comment on view brooq.staged_calls is
'The router''s bulk enqueues this partition holds a share of: call id, state (staged, published, fenced, discarded), topic, jobs still unclaimable, when they become claimable once published, when staged and decided.';

revoke all on brooq.staged_calls from public;
grant select on brooq.staged_calls to brooq_admin;
