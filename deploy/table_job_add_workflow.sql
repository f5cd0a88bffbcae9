-- Deploy brooq:table_job_add_workflow to pg
-- requires: table_job
-- A migration (written by hand; sql/table_job.sql holds its result).

begin;

-- Workflows (docs/architecture.md, "Workflows"): the state waiting, which no claim
-- reads (job_ready_idx holds pending and failed only), and the columns of a job
-- with parents (after_policy, parents_left, canceled_by: the parent whose end
-- canceled it); a job's children are its edges in brooq.job_edge. Columns
-- with constant defaults: no rewrite of the table; the domain's new check reads
-- brooq.job once, under a lock that blocks writes to it. No CHECK constraint on the
-- new columns: each would cost every single-row enqueue and every settle statement
-- 2-5 us of CPU (its expression is prepared per statement); enqueue and
-- brooq._release hold them (docs/architecture.md, "Workflows").
alter domain brooq.job_state drop constraint job_state_known;
alter domain brooq.job_state add constraint job_state_known
    check (value in ('pending', 'processing', 'done', 'failed', 'dead', 'canceled', 'waiting'));

comment on domain brooq.job_state is
'pending, processing, failed (waiting for a retry), waiting (for its parents, brooq.job_edge), and the terminal done, dead, canceled.';

alter table brooq.job
    add column after_policy text,
    add column parents_left integer not null default 0,
    add column canceled_by bigint;

commit;
