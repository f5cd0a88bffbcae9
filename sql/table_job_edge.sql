-- brooq.job_edge: one row per (parent, child) of a workflow: the child, enqueued with
-- after => (parent, ...), waits until its parents have finished (docs/architecture.md,
-- "Workflows"). Written by brooq.enqueue and enqueue_many (settled = false while the
-- parent has not finished, true when it had already) and by brooq._release, which
-- sets settled once the parent's end has been counted in the child's parents_left:
-- each parent is counted once per child, even if it is re-driven and ends again.
-- A child's handler reads its parents through (child, parent). No foreign keys:
-- purge deletes jobs (a child's edges with it; a parent is kept while a child of
-- it has not finished), and a key-share lock on the parent for every edge would make
-- producers contend for it.
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
