-- Deploy brooq:table_job_add_progress to pg
-- requires: table_job
-- A migration (written by hand; sql/table_job.sql holds its result).

begin;

-- What a running handler last reported (job.progress() in Python, through
-- brooq.heartbeat): a fraction and/or a message. NULL: nothing reported.
-- A nullable column without a default: no table rewrite.
alter table brooq.job add column progress jsonb;

commit;
