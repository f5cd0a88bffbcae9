-- Revert brooq:types_claimed_job_add_parents from pg

begin;

alter type brooq.claimed_job drop attribute parents;

commit;
