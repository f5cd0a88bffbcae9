-- Deploy brooq:table_job_add_failures_idx to pg
-- requires: table_job
-- A migration (written by hand; sql/table_job.sql holds its result).

begin;

-- The dashboard's lists of failed, dead and canceled jobs, newest first, one range
-- per topic and state. Without it a list walked job_pkey back from the newest job until it had
-- 200 rows of those states: over 10,000,000 done rows with 10,000 dead, 0.9-1.3 s.
-- Only failing jobs write to it. Building it reads brooq.job once, under a lock that
-- blocks writes to it.
create index job_failures_idx on brooq.job (topic, state, id)
    where state in ('failed', 'dead', 'canceled');

commit;
