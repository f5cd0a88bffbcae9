-- Deploy brooq:types_claimed_job_add_execution to pg
-- requires: types
-- A migration (written by hand; sql/types.sql holds its result).

begin;

-- brooq.claim's answer says how much of the topic's max_execution the job has
-- left: the instant it runs out, and the time left at the claim (a
-- worker sets its timer from the interval and never compares a database instant
-- with its own clock). Both NULL when the topic has no max_execution.
alter type brooq.claimed_job
    add attribute execution_deadline timestamptz,
    add attribute execution_left interval;

commit;
