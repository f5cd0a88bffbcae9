-- Revert brooq:views from pg
-- Written by hand (the rework added columns, which create or replace view cannot take back): drops the three views it changed,
-- then restores views@v0.1.0, the body of its deploy script.

begin;

drop view brooq.in_flight;
drop view brooq.jobs;
drop view brooq.topic_stats;

-- The observability views. They read only the partial indexes of active jobs
-- (ready, in flight), so they stay cheap to scrape on a table of millions of
-- terminal rows. They run with the owner's rights: grant them, not the table.

-- brooq.topic_stats: one row per declared topic.
--   pending, failed        jobs in that state (failed = waiting for a retry)
--   ready                  of those, claimable now
--   scheduled              of those, not yet available
--   processing             jobs in flight
--   expired                in flight with an expired lease (reap will return them)
--   oldest_ready_age       how long the oldest ready job has waited (NULL: none)
create or replace view brooq.topic_stats as
select t.name as topic,
       t.paused,
       coalesce(w.pending, 0) as pending,
       coalesce(w.failed, 0) as failed,
       coalesce(w.ready, 0) as ready,
       coalesce(w.pending + w.failed - w.ready, 0) as scheduled,
       coalesce(f.processing, 0) as processing,
       coalesce(f.expired, 0) as expired,
       (select brooq._now()) - w.oldest_ready_at as oldest_ready_age
  from brooq.topic t
  -- Grouped once, then joined: a lateral subquery per topic row made the planner
  -- multiply the scan's cost by its guess of the topic count (600 before the tiny
  -- topic table is ever analyzed), which switched JIT on: 150-300 ms per scrape.
  -- (select brooq._now()) is evaluated once per query, not once per row.
  left join (
       select j.topic,
              count(*) filter (where j.state = 'pending') as pending,
              count(*) filter (where j.state = 'failed') as failed,
              count(*) filter (where j.available_at <= (select brooq._now())) as ready,
              min(j.available_at) filter (where j.available_at <= (select brooq._now())) as oldest_ready_at
         from brooq.job j
        where j.state in ('pending', 'failed')
        group by j.topic
  ) as w on w.topic = t.name
  left join (
       select j.topic,
              count(*) as processing,
              count(*) filter (where j.locked_until < (select brooq._now())) as expired
         from brooq.job j
        where j.locked_until is not null
        group by j.topic
  ) as f on f.topic = t.name;

comment on view brooq.topic_stats is
'Per topic: pending, failed (waiting), ready now, scheduled, processing, expired leases, age of the oldest ready job.';

-- brooq.in_flight: every job being processed, who holds it and until when.
create or replace view brooq.in_flight as
select j.id, j.topic, j.attempts, j.max_attempts, j.locked_by, j.locked_until,
       j.updated_at as claimed_at,
       brooq._now() - j.updated_at as running_for,
       j.locked_until < brooq._now() as expired
  from brooq.job j
 where j.locked_until is not null;

comment on view brooq.in_flight is
'Jobs in flight: who holds each lease, since when, until when, and whether it expired.';

revoke all on brooq.topic_stats, brooq.in_flight from public;
grant select on brooq.topic_stats, brooq.in_flight to brooq_worker, brooq_admin;

-- brooq.jobs: every job and its outcome, read-only. A job's fate is one
--   select state, attempts, last_error, result from brooq.jobs where id = $1;
create or replace view brooq.jobs as
select j.id, j.topic, j.state, j.attempts, j.max_attempts, j.priority, j.payload,
       j.idempotency_key, j.available_at, j.created_at, j.updated_at,
       j.locked_by, j.locked_until, j.last_error, j.result
  from brooq.job j;

comment on view brooq.jobs is
'Every job and its outcome (read-only): a job''s fate is one SELECT ... WHERE id = $1.';

revoke all on brooq.jobs from public;
grant select on brooq.jobs to brooq_producer, brooq_worker, brooq_admin;

commit;
