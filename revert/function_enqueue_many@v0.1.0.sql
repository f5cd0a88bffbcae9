-- Revert brooq:function_enqueue_many from pg

begin;

drop function brooq.enqueue_many(text, jsonb[], text[], timestamptz, integer, interval);

commit;
