-- Verify brooq_proxy:cluster on pg

begin;

select 1 / count(*)::int from pg_catalog.pg_language where lanname = 'plproxy';
select number, connstr, added_at from brooq_proxy.partition where false;
select number, connstr, added_at, first_job_id from brooq_proxy.partitions where false;
select 'plproxy.get_cluster_version(text)'::regprocedure,
       'plproxy.get_cluster_partitions(text)'::regprocedure,
       'plproxy.get_cluster_config(text)'::regprocedure,
       'brooq_proxy.partition_of(bigint)'::regprocedure,
       'brooq_proxy.route(text, text, text)'::regprocedure,
       'brooq_proxy.connstr_has_password(text)'::regprocedure,
       'brooq_proxy.add_partition(text)'::regprocedure;
select 1 / (brooq_proxy.partition_of((3::bigint << 48) + 5) = 3)::int;
select 1 / (brooq_proxy.connstr_has_password('host=h password=x')
           and not brooq_proxy.connstr_has_password('host=h passfile=x'))::int;

rollback;
