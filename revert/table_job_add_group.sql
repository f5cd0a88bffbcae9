-- Revert brooq:table_job_add_group from pg

begin;

drop index brooq.job_group_idx;
alter table brooq.job drop column group_key, drop column group_seq;

commit;
