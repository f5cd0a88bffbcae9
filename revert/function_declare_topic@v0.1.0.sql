-- Revert brooq:function_declare_topic from pg

begin;

drop function brooq.declare_topic(text, integer, interval, interval, interval, integer, boolean);

commit;
