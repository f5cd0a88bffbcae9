-- Revert brooq:function_settle_many from pg

begin;

drop function brooq.settle_many(text, bigint[], bigint[], text[], text[], interval[], jsonb[]);

commit;
