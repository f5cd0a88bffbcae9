-- Revert brooq:table_claim_window from pg

begin;

drop table brooq.claim_window;

commit;
