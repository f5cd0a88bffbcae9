-- Verify brooq:private_trace_context on pg
-- Each statement fails (division by zero, or a missing object) when the change is not in place.

begin;

select 1 / (brooq._trace_context('{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}', 'verify') is not null
            and brooq._trace_context('{}', 'verify') is null)::int;
select 1 / (count(*) = 0)::int from pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
 where p.oid = 'brooq._trace_context(jsonb, text)'::regprocedure and a.grantee = 0;

rollback;
