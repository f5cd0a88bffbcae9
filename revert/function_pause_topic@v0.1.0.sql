-- Revert brooq:function_pause_topic from pg

begin;

drop function brooq.resume_topic(text);
drop function brooq.pause_topic(text);
drop function brooq._set_paused(text, boolean);

commit;
