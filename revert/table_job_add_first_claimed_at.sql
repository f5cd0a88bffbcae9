-- Revert brooq:table_job_add_first_claimed_at from pg

begin;

alter table brooq.job drop column first_claimed_at;

commit;
