-- Revert brooq:table_staged_call from pg

begin;

drop view brooq.staged_calls;
drop table brooq.staged_call;

commit;
