-- Deploy brooq:table_job_add_first_claimed_at to pg
-- requires: table_job
-- A migration (written by hand; sql/table_job.sql holds its result).

begin;

-- When the job was first claimed: set by brooq.claim on the first claim and kept
-- on every later one; the topic's max_execution counts from it. NULL:
-- never claimed (or claimed only before this change: its next claim sets it).
-- A nullable column without a default: no table rewrite.
alter table brooq.job add column first_claimed_at timestamptz;

commit;
