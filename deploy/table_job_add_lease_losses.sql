-- Deploy brooq:table_job_add_lease_losses to pg
-- requires: table_job
-- A migration (written by hand; sql/table_job.sql holds its result).

begin;

-- How many times in a row this job's lease was lost (reaped) since an outcome was
-- last written for it: brooq.reap adds 1, every settle that writes an outcome
-- resets it to 0. At the topic's max_lease_losses, reap makes the job dead.
-- A constant default: no rewrite of the table (existing jobs start at 0).
alter table brooq.job
    add column lease_losses integer not null default 0,
    add constraint job_lease_losses_not_negative check (lease_losses >= 0);

-- brooq.claim takes at most one such job per call: found through this index, which
-- is empty on a healthy queue (so the extra lookup costs nothing).
create index job_suspect_idx on brooq.job (topic, priority desc, available_at, id)
    where state in ('pending', 'failed') and lease_losses > 0;

commit;
