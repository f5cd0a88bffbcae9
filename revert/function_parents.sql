-- Revert brooq:function_parents from pg

begin;

drop function brooq.children(bigint, integer);
drop type brooq.child_job;
drop function brooq._parents_json(bigint);
drop function brooq.parents(bigint);
drop type brooq.parent_job;

commit;
