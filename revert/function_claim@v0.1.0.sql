-- Revert brooq:function_claim from pg

begin;

drop function brooq.claim(text, text[], integer, interval);

commit;
