-- Revert brooq:types_claimed_job_add_execution from pg

begin;

alter type brooq.claimed_job drop attribute execution_left, drop attribute execution_deadline;

commit;
