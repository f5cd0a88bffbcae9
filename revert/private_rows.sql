-- Revert brooq:private_rows from pg

begin;

drop function brooq._settle_rows(bigint[], bigint[], text[], text[], interval[], jsonb[]);
drop function brooq._heartbeat_rows(bigint[], bigint[], jsonb[]);

commit;
