-- Deploy brooq:types_claimed_job_add_parents to pg
-- requires: types
-- A migration (written by hand; sql/types.sql holds its result).

begin;

-- brooq.claim hands a job with parents (workflows) their ids, topics and states, so that
-- its handler knows them without a query of its own (NULL: the job has no parents).
alter type brooq.claimed_job add attribute parents jsonb;

commit;
