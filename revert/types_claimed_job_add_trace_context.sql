-- Revert brooq:types_claimed_job_add_trace_context from pg

begin;

alter type brooq.claimed_job drop attribute trace_context;

commit;
