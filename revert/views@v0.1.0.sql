-- Revert brooq:views from pg

begin;

drop view brooq.jobs;
drop view brooq.in_flight;
drop view brooq.topic_stats;

commit;
