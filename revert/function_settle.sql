-- Revert brooq:function_settle from pg

begin;

drop function brooq.settle(bigint, text, bigint, text, text, interval, jsonb);

commit;
