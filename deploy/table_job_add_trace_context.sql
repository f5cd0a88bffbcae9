-- Deploy brooq:table_job_add_trace_context to pg
-- requires: table_job
-- A migration (written by hand; sql/table_job.sql holds its result).

begin;

-- The W3C trace context the producer enqueued the job under (OpenTelemetry:
-- {"traceparent": ..., "tracestate": ...}, checked by brooq._trace_context, at most
-- ~620 bytes); NULL: none. Beside the payload, never inside it: the payload is the
-- producer's own (invariant 5, docs/architecture.md). A nullable column without a
-- default: no table rewrite.
alter table brooq.job add column trace_context jsonb;

commit;
