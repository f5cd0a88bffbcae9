-- Revert brooq:function_parents from pg

begin;

drop function brooq.children(bigint, integer);
drop type brooq.child_job;
drop view brooq._job_parents;
drop function brooq.parents(bigint);
drop type brooq.parent_job;

commit;
