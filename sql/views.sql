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
--   max_in_flight, rate, per   the topic's flow limits (NULL: none; brooq.declare_topic)
--   held_by_in_flight      ready jobs that max_in_flight keeps from a claim now:
--                          ready - (max_in_flight - processing), at least 0
--   held_by_rate           ready jobs that the rate keeps from a claim now:
--                          ready - (rate - jobs claimed in the last per), at least 0
--   held_by_group          ready jobs of an ordered group that wait for an earlier
--                          job of their group (pending, failed or processing)
--   max_execution          the longest a job may take across all its attempts (NULL:
--                          no limit; brooq.declare_topic). A worker that may not read
--                          brooq.topic checks its attempt timeout against it at start.
--   waiting                jobs waiting for their parents (workflows), never claimed
--                          until the last parent finishes; counted from the unsettled
--                          edges of brooq.job_edge (nothing to read without workflows)
create or replace view brooq.topic_stats as
select t.name as topic,
       t.paused,
       coalesce(w.pending, 0) as pending,
       coalesce(w.failed, 0) as failed,
       coalesce(w.ready, 0) as ready,
       coalesce(w.pending + w.failed - w.ready, 0) as scheduled,
       coalesce(f.processing, 0) as processing,
       coalesce(f.expired, 0) as expired,
       (select brooq._now()) - w.oldest_ready_at as oldest_ready_age,
       t.max_in_flight,
       t.rate,
       t.per,
       case when t.max_in_flight is null then 0
            else greatest(coalesce(w.ready, 0) - greatest(t.max_in_flight - coalesce(f.processing, 0), 0), 0)
       end as held_by_in_flight,
       case when t.rate is null then 0
            else greatest(coalesce(w.ready, 0) - greatest(t.rate - coalesce((
                     select sum(c.jobs) from brooq.claim_window c
                      where c.topic = t.name and c.claimed_at > (select brooq._now()) - t.per), 0), 0), 0)
       end as held_by_rate,
       t.max_execution,
       coalesce(g.held, 0) as held_by_group,
       coalesce(wt.waiting, 0) as waiting
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
  ) as f on f.topic = t.name
  -- ready grouped jobs behind an earlier active job of their group: job_group_idx
  left join (
       select j.topic, count(*) as held
         from brooq.job j
        where j.group_key is not null
          and j.state in ('pending', 'failed', 'processing')
          and j.state <> 'processing'
          and j.available_at <= (select brooq._now())
          and exists (select from brooq.job k
                       where k.topic = j.topic and k.group_key = j.group_key and k.group_key is not null
                         and k.state in ('waiting', 'pending', 'failed', 'processing') and k.group_seq < j.group_seq)
        group by j.topic
  ) as g on g.topic = t.name
  -- jobs waiting for their parents: each has an edge not settled yet (workflows)
  left join (
       select c.topic, count(*) as waiting
         from brooq.job c
        where c.id in (select e.child from brooq.job_edge e where not e.settled)
          and c.state = 'waiting'
        group by c.topic
  ) as wt on wt.topic = t.name;

comment on view brooq.topic_stats is
'Per topic: pending, failed (waiting), ready now, scheduled, processing, expired leases, age of the oldest ready job, the flow limits and the ready jobs each holds back (held_by_in_flight, held_by_rate, held_by_group), max_execution, jobs waiting for their parents (waiting).';

-- brooq.in_flight: every job being processed, who holds it and until when.
create or replace view brooq.in_flight as
select j.id, j.topic, j.attempts, j.max_attempts, j.locked_by, j.locked_until,
       j.updated_at as claimed_at,
       brooq._now() - j.updated_at as running_for,
       j.locked_until < brooq._now() as expired,
       j.progress
  from brooq.job j
 where j.locked_until is not null;

comment on view brooq.in_flight is
'Jobs in flight: who holds each lease, since when, until when, whether it expired, and the progress its handler reported.';

revoke all on brooq.topic_stats, brooq.in_flight from public;
grant select on brooq.topic_stats, brooq.in_flight to brooq_worker, brooq_admin;

-- brooq.jobs: every job and its outcome, read-only. A job's fate is one
--   select state, attempts, last_error, result from brooq.jobs where id = $1;
create or replace view brooq.jobs as
select j.id, j.topic, j.state, j.attempts, j.max_attempts, j.priority, j.payload,
       j.idempotency_key, j.available_at, j.created_at, j.updated_at,
       j.locked_by, j.locked_until, j.last_error, j.result, j.progress, j.group_key
  from brooq.job j;

comment on view brooq.jobs is
'Every job and its outcome (read-only): a job''s fate is one SELECT ... WHERE id = $1.';

revoke all on brooq.jobs from public;
grant select on brooq.jobs to brooq_producer, brooq_worker, brooq_admin;
