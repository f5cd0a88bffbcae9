-- Revert brooq:private_trace_context from pg

begin;

drop function brooq._trace_context(jsonb, text);

commit;
