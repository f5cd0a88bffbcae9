-- Revert brooq:function_retry from pg

begin;

drop function brooq.retry_dead(text, boolean, integer, timestamptz, boolean);
drop function brooq.retry(bigint, boolean);
drop function brooq._retry(bigint[], text[], boolean);

commit;
