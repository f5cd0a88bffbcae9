-- brooq.event: the events emitted (brooq.emit_event), each kept until expires_at
-- (emitted_at + its keep, 1 day by default): a job that starts waiting for a name
-- within that time still receives it (brooq.wait_for_event: the earliest kept event
-- of the name the job has not received yet). purge deletes expired events. xid:
-- the emitting transaction (brooq._wake_missed's sweep); emitted_by: its session
-- user, for audit.
create table brooq.event (
    id         bigint      generated always as identity,
    name       text        not null,
    payload    jsonb       not null,
    emitted_at timestamptz not null,
    expires_at timestamptz not null,
    emitted_by text        not null,
    xid        xid8        not null,
    constraint event_pkey primary key (id),
    constraint event_name_valid check (name <> '' and length(name) <= 200)
);

-- wait_for_event: the earliest kept event of a name
create index event_name_idx on brooq.event (name, id);
-- _wake_missed: the events emitted since its last sweep
create index event_xid_idx on brooq.event (xid);
-- purge: expired events, oldest first
create index event_expires_idx on brooq.event (expires_at);

comment on table brooq.event is
'Events emitted by brooq.emit_event, kept until expires_at for the jobs that wait for them (private).';

revoke all on table brooq.event from public;

-- brooq.event_sweep: one row, the sweep's cursor: every transaction below it had
-- ended when brooq._wake_missed last matched waits and events, so only waits and
-- events of transactions from the cursor on can make a pair that no one matched yet.
create table brooq.event_sweep (
    only_row boolean not null default true,
    swept_to xid8    not null default '0',
    constraint event_sweep_pkey primary key (only_row),
    constraint event_sweep_one_row check (only_row)
);

insert into brooq.event_sweep default values;

comment on table brooq.event_sweep is
'The cursor of brooq._wake_missed: the oldest transaction whose waits and events its next sweep matches (private, one row).';

revoke all on table brooq.event_sweep from public;
