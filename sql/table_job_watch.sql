-- brooq.job_watch: the jobs somebody waits on (brooq.wait in Python). A waiter
-- registers with brooq.watch, listens on the channel brooq_settled, and
-- unregisters with brooq.unwatch. settle_many and cancel look here (one probe of
-- an almost always empty table) and NOTIFY brooq_settled, payload the job id,
-- only for watched jobs that became terminal: nobody watching, no NOTIFY, whose
-- commit would take PostgreSQL's cluster-wide notify lock on the hot path.
-- A watch left by a waiter that died is dropped by the next watch a day later.
create table brooq.job_watch (
    id     bigint      generated always as identity,
    job_id bigint      not null,
    since  timestamptz not null,
    constraint job_watch_pkey primary key (id)
);

create index job_watch_job_idx on brooq.job_watch (job_id);

comment on table brooq.job_watch is
'Jobs somebody waits on to become terminal (private: use brooq.watch and brooq.unwatch).';

revoke all on table brooq.job_watch from public;
