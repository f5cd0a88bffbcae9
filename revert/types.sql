-- Revert brooq:types from pg

begin;

drop type brooq.maintenance_job;
drop type brooq.reaped;
drop type brooq.settled;
drop type brooq.claimed_job;
drop type brooq.enqueued;

commit;
