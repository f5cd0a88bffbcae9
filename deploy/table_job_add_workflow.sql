-- Deploy brooq:table_job_add_workflow to pg
-- requires: table_job
-- A migration (written by hand; sql/table_job.sql holds its result).

begin;

-- Workflows (docs/architecture.md, "Workflows"): the state waiting, which no claim
-- reads (job_ready_idx holds pending and failed only), and the columns of a job
-- with parents (after_policy, parents_left) or children (has_children). Columns
-- with constant defaults: no rewrite of the table; the new constraints and the
-- domain's check read brooq.job once, under a lock that blocks writes to it.
alter domain brooq.job_state drop constraint job_state_known;
alter domain brooq.job_state add constraint job_state_known
    check (value in ('pending', 'processing', 'done', 'failed', 'dead', 'canceled', 'waiting'));

comment on domain brooq.job_state is
'pending, processing, failed (waiting for a retry), waiting (for its parents, brooq.job_edge), and the terminal done, dead, canceled.';

alter table brooq.job
    add column after_policy text,
    add column parents_left integer not null default 0,
    add column has_children boolean not null default false,
    add constraint job_after_policy_known check (after_policy in ('cancel', 'run')),
    add constraint job_parents_left_not_negative check (parents_left >= 0),
    add constraint job_waiting_iff_parents_left check (
        (state = 'waiting') = (parents_left > 0) or state = 'canceled');

commit;
