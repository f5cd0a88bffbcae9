-- brooq.job_group: per (topic, group_key) ever used by a grouped enqueue, the last
-- group_seq given. brooq.enqueue and enqueue_many update its row (insert on the
-- first job) before inserting the job, and the row lock they take is held to their
-- commit: two transactions that enqueue into one group run their enqueues one
-- after the other, so group_seq grows in commit order, and a job committed later
-- never gets a smaller number than one a claim could already see. That is what
-- lets brooq.claim decide "no earlier job of the group is active" from its
-- snapshot alone. Rows are small and kept (one per group ever used).
create table brooq.job_group (
    topic     text   not null,
    group_key text   not null,
    last_seq  bigint not null,
    constraint job_group_pkey primary key (topic, group_key)
);

comment on table brooq.job_group is
'The last group_seq given per (topic, group_key) (private: written by brooq.enqueue and enqueue_many).';

revoke all on table brooq.job_group from public;
