-- Revert brooq:function_enqueue from pg

begin;

drop function brooq.enqueue(text, jsonb, text, timestamptz, integer, interval);

commit;
