-- Deploy brooq:types_claimed_job_add_trace_context to pg
-- requires: types
-- A migration (written by hand; sql/types.sql holds its result).

begin;

-- brooq.claim hands the worker the trace context the job was enqueued under
-- (brooq.job.trace_context, NULL: none), so that its attempt continues the trace.
alter type brooq.claimed_job add attribute trace_context jsonb;

commit;
