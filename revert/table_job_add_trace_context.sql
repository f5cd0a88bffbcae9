-- Revert brooq:table_job_add_trace_context from pg

begin;

alter table brooq.job drop column trace_context;

commit;
