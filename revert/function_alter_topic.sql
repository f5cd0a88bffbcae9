-- Revert brooq:function_alter_topic from pg

begin;

drop function brooq.alter_topic(text, integer, interval, interval, interval, integer, boolean, interval, integer, integer, integer, interval, interval, boolean, boolean, text[]);

commit;
