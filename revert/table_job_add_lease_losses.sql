-- Revert brooq:table_job_add_lease_losses from pg

begin;

alter table brooq.job drop column lease_losses;

commit;
