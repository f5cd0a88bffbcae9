-- brooq._trace_context(trace_context, caller) -> jsonb
--
-- Checks the W3C trace context a producer hands to brooq.enqueue or
-- brooq.enqueue_many (OpenTelemetry's propagation format) and returns what to
-- store in brooq.job.trace_context: NULL for NULL or '{}' (no context), else the
-- object itself. The queue never reads it: the worker continues the trace from it.
--
-- Accepted: a JSON object with the key "traceparent", a string of the form
-- VV-<32 lowercase hex>-<16 lowercase hex>-<2 lowercase hex> (version not ff,
-- trace id and parent id not all zeros; 55 characters), and optionally the key
-- "tracestate", a string of at most 512 characters. Nothing else (so at most
-- ~620 bytes per job).
--
-- Errors:
--   22023 invalid_parameter_value  anything else (the value is quoted, cut to 80
--                                  characters); the caller names the function
--
-- Private: the security definer functions call it; no role may.
create or replace function brooq._trace_context(trace_context jsonb, caller text)
returns jsonb
language plpgsql
immutable
parallel safe
set search_path = pg_catalog, pg_temp
as $$
declare
    v_parent text := trace_context ->> 'traceparent';
begin
    if trace_context is null or trace_context = '{}'::jsonb then
        return null;
    end if;
    if jsonb_typeof(trace_context) <> 'object'
        or exists (select from jsonb_object_keys(trace_context) k
                    where k not in ('traceparent', 'tracestate'))
        or jsonb_typeof(trace_context -> 'traceparent') is distinct from 'string'
        or v_parent !~ '^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$'
        or left(v_parent, 2) = 'ff'
        or substr(v_parent, 4, 32) = repeat('0', 32)
        or substr(v_parent, 37, 16) = repeat('0', 16)
        or (trace_context ? 'tracestate'
            and (jsonb_typeof(trace_context -> 'tracestate') <> 'string'
                 or length(trace_context ->> 'tracestate') > 512)) then
        raise exception '%: trace_context % is not a W3C trace context', caller, left(trace_context::text, 80)
            using errcode = 'invalid_parameter_value',
                  hint = 'Pass {"traceparent": "00-<32 hex>-<16 hex>-<2 hex>"} and optionally "tracestate" (at most 512 characters), or NULL.';
    end if;
    return trace_context;
end
$$;

comment on function brooq._trace_context(jsonb, text) is
'Private: a W3C trace context checked for brooq.job.trace_context (NULL for NULL or {}). Errors: 22023 not a trace context.';

revoke all on function brooq._trace_context(jsonb, text) from public;
