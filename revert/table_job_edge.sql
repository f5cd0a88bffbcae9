-- Revert brooq:table_job_edge from pg

begin;

drop table brooq.job_edge_check;
drop table brooq.job_edge;

commit;
