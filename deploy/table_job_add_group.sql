-- Deploy brooq:table_job_add_group to pg
-- requires: table_job
-- A migration (written by hand; sql/table_job.sql holds its result).

begin;

-- Ordered groups: the jobs of one (topic, group_key) run one at a time,
-- in group_seq order, which brooq.enqueue draws from brooq.job_group. Nullable
-- columns without a default: no rewrite of the table. Building job_group_idx reads
-- brooq.job once, under a lock that blocks writes to it (not reads).
alter table brooq.job
    add column group_key text,
    add column group_seq bigint,
    add constraint job_group_key_valid check (group_key <> '' and length(group_key) <= 255),
    add constraint job_group_seq_iff_key check ((group_key is null) = (group_seq is null));

-- claim: is an earlier job of the group still active (pending, failed or processing)?
-- One probe per grouped candidate; holds only grouped jobs that are not terminal.
create index job_group_idx on brooq.job (topic, group_key, group_seq)
    where group_key is not null and state in ('pending', 'failed', 'processing');

commit;
