-- Revert brooq:function_drop_topic from pg

begin;

drop function brooq.drop_topic(text, boolean);

commit;
