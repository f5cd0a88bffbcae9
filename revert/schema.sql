-- Revert brooq:schema from pg

begin;

drop schema brooq;

commit;
