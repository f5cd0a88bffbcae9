-- Revert brooq:function_retry from pg

begin;

drop function brooq.retry_dead(text, boolean, integer, timestamptz);
drop function brooq.retry(bigint);
drop function brooq._retry(bigint[], text[]);

commit;
