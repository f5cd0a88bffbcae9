-- brooq._result_too_large(job_id, bytes, max_bytes, topic) -> jsonb (never returns)
--
-- Raises 54000 for a result larger than its topic's max_payload_bytes. settle_many
-- calls it from inside its UPDATE, only for such a result, so the check costs the
-- hot path nothing but a length.
-- Errors:
--   54000 program_limit_exceeded  always
create or replace function brooq._result_too_large(job_id bigint, bytes integer, max_bytes integer, topic text)
returns jsonb
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
begin
    raise exception 'result of job % is % bytes, larger than the % bytes allowed for topic "%"',
            _result_too_large.job_id, _result_too_large.bytes, _result_too_large.max_bytes,
            left(_result_too_large.topic, 200)
        using errcode = 'program_limit_exceeded',
              hint = 'Store large results elsewhere and return a reference, or raise max_payload_bytes with brooq.declare_topic.';
end
$$;

comment on function brooq._result_too_large(bigint, integer, integer, text) is
'Private: raise 54000 for a result above the topic''s max_payload_bytes (settle_many). Errors: 54000.';

revoke all on function brooq._result_too_large(bigint, integer, integer, text) from public;
