-- Revert brooq:function_retry from pg

begin;

drop function brooq.retry_dead(text, boolean, integer, timestamptz, boolean, boolean);
drop function brooq.retry(bigint, boolean, boolean);
drop function brooq._retry(bigint[], text[], boolean, boolean);

commit;
