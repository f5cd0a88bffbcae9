-- Verify brooq:table_event on pg
-- Each statement fails (division by zero, or a missing object) when the change is not in place.

begin;

select id, name, payload, emitted_at, expires_at, emitted_by, xid from brooq.event where false;
select 'brooq.event_name_idx'::regclass, 'brooq.event_xid_idx'::regclass, 'brooq.event_expires_idx'::regclass;
select only_row, swept_to from brooq.event_sweep where false;
select 1 / (not pg_catalog.has_table_privilege('brooq_producer', 'brooq.event', 'select'))::int;
select 1 / (not pg_catalog.has_table_privilege('brooq_admin', 'brooq.event', 'insert'))::int;

rollback;
