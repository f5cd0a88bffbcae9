-- Verify brooq:table_claim_window on pg
-- Each statement fails (division by zero, or a missing object) when the change is not in place.

begin;

select topic, claimed_at, jobs from brooq.claim_window where false;
select 1 / (not pg_catalog.has_table_privilege('brooq_admin', 'brooq.claim_window', 'select'))::int;

rollback;
