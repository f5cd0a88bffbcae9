-- Revert brooq:function_enqueue_staged from pg

begin;

drop function brooq.enqueue_staged(uuid, text, jsonb[], text[], timestamptz, integer, interval, text[], jsonb);
drop function brooq.decide_staged(uuid, text);
drop function brooq.forget_staged(interval, uuid[]);

commit;
