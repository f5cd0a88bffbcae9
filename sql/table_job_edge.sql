-- brooq.job_edge: one row per (parent, child) of a workflow: the child, enqueued with
-- after => (parent, ...), waits until its parents have finished (docs/architecture.md,
-- "Workflows"). Written by brooq.enqueue and enqueue_many (settled = false while the
-- parent has not finished, true when it had already) and by brooq._release, which
-- sets settled once the parent's end has been counted in the child's parents_left:
-- each parent is counted once per child, even if it is re-driven and ends again.
-- A child's handler reads its parents through (child, parent). No foreign keys:
-- purge deletes jobs (a child's edges with it; a parent is kept while a child of
-- it has not finished). The enqueue of a child locks its parents FOR KEY SHARE, as
-- a foreign key would, and nothing more: a settle, heartbeat or claim of a parent
-- never waits for a producer's transaction.
create table brooq.job_edge (
    parent  bigint  not null,
    child   bigint  not null,
    settled boolean not null default false,
    constraint job_edge_pkey primary key (parent, child),
    constraint job_edge_not_self check (parent <> child)
);

-- what a child waits for, and its parents' results; purge's delete of a child's edges
create index job_edge_child_idx on brooq.job_edge (child, parent);

comment on table brooq.job_edge is
'Workflow edges: the child waits for the parent (private: written by brooq.enqueue, enqueue_many and brooq._release).';

revoke all on table brooq.job_edge from public;

-- brooq.job_edge_check: the children whose edges a settle may not have seen. A
-- child enqueued (in one transaction) after a parent of another transaction that
-- had not finished yet: a settle of that parent that ran before the child's commit
-- could not see its edge, so it did not count the parent's end. brooq.reap calls
-- brooq._release_missed, which counts such ends and forgets a child once no edge
-- of it is left unsettled. checked_at: when it was last looked at (NULL: never),
-- the least recent first.
create table brooq.job_edge_check (
    child      bigint      not null,
    checked_at timestamptz,
    constraint job_edge_check_pkey primary key (child)
);

comment on table brooq.job_edge_check is
'Workflow children whose parents'' ends brooq.reap re-counts (private: written by brooq.enqueue, enqueue_many and brooq._release_missed).';

revoke all on table brooq.job_edge_check from public;
