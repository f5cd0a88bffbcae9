-- Revert brooq_proxy:cluster from pg

begin;

drop schema brooq_proxy cascade;
drop function plproxy.get_cluster_version(text);
drop function plproxy.get_cluster_partitions(text);
drop function plproxy.get_cluster_config(text);
drop schema if exists plproxy;  -- kept when something else lives there
drop extension if exists plproxy;

commit;
