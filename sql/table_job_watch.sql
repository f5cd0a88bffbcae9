-- brooq.job_watch: the jobs somebody waits on (brooq.wait in Python). A waiter
-- registers with brooq.watch, listens on the channel brooq_settled, and
-- unregisters with brooq.unwatch. settle_many and cancel look here (one probe of
-- an almost always empty table) and NOTIFY brooq_settled, payload the job id,
-- only for watched jobs that became terminal: nobody watching, no NOTIFY, whose
-- commit would take PostgreSQL's cluster-wide notify lock on the hot path.
-- A watch left by a waiter that died is dropped by a watch made a day later
-- (job_watch_since_idx finds them).
-- id is random (see brooq.watch), not a sequence: unwatch takes only an id, so only
-- whoever was given the id can remove the watch.
create table brooq.job_watch (
    id     bigint      not null,
    job_id bigint      not null,
    since  timestamptz not null,
    constraint job_watch_pkey primary key (id),
    constraint job_watch_id_positive check (id > 0)
);

create index job_watch_job_idx on brooq.job_watch (job_id);
create index job_watch_since_idx on brooq.job_watch (since);

comment on table brooq.job_watch is
'Jobs somebody waits on to become terminal (private: use brooq.watch and brooq.unwatch).';

revoke all on table brooq.job_watch from public;
