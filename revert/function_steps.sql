-- Revert brooq:function_steps from pg

begin;

drop function brooq.wait_for_event(text, bigint, bigint, text, text, interval);
drop function brooq.sleep(text, bigint, bigint, text, timestamptz, interval);
drop function brooq.steps(bigint, integer);
drop function brooq.checkpoint(text, bigint, bigint, text, jsonb);
drop type brooq.awaited;
drop type brooq.suspended;
drop type brooq.step;
drop type brooq.checkpointed;

commit;
