-- Revert brooq:table_job_add_workflow from pg

begin;

-- The release being reverted to has no waiting state: a job still waiting for its
-- parents is canceled, its reason in last_error (every job is kept; an admin may
-- re-drive it with brooq.retry once its parents are done).
update brooq.job
   set state = 'canceled',
       last_error = concat_ws('; ', last_error,
                              'canceled by a revert of workflows while waiting for '
                              || parents_left || ' parent(s)'),
       updated_at = clock_timestamp()
 where state = 'waiting';

alter table brooq.job
    drop column after_policy,
    drop column parents_left,
    drop column canceled_by;

alter domain brooq.job_state drop constraint job_state_known;
alter domain brooq.job_state add constraint job_state_known
    check (value in ('pending', 'processing', 'done', 'failed', 'dead', 'canceled'));

comment on domain brooq.job_state is
'pending, processing, failed (waiting for a retry), and the terminal done, dead, canceled.';

commit;
