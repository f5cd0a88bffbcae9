-- Revert brooq:function_parents from pg

begin;

drop function brooq.parents(bigint);
drop type brooq.parent_job;

commit;
