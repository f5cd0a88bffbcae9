-- Revert brooq:function_emit_event from pg

begin;

drop function brooq._wake_missed();
drop function brooq.emit_event(text, jsonb, interval);
drop type brooq.emitted;

commit;
