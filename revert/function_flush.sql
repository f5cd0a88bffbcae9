-- Revert brooq:function_flush from pg

begin;

drop function brooq.flush(text, text[]);

commit;
