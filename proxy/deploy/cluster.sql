-- Deploy brooq_proxy:cluster to pg
-- PL/Proxy, the cluster `brooq` and the one admin function that grows it.
--
-- The cluster is defined through PL/Proxy's configuration API (the three
-- plproxy.get_cluster_* functions, read on every call and cached by version), not
-- through SQL/MED: the partition list is then an ordinary table that
-- brooq_proxy.add_partition() writes in the same transaction as its checks.
--
-- Partition p hands out job ids from p * 2^48 + 1 (brooq_proxy.add_partition sets
-- its brooq.job id sequence there), so a job id alone names its partition:
-- brooq_proxy.partition_of(id) = id >> 48. 2^48 ids per partition (2.8e14) and
-- up to 32,767 partitions fit a bigint. Nothing in a partition's schema changes.

begin;

create extension if not exists plproxy;

create schema brooq_proxy;
comment on schema brooq_proxy is
'A brooq router''s own objects: the partition list, its admin function and the routing helpers.';
revoke all on schema brooq_proxy from public;
grant usage on schema brooq_proxy to brooq_producer, brooq_worker, brooq_admin;

create schema if not exists plproxy;
revoke all on schema plproxy from public;
grant usage on schema plproxy to brooq_producer, brooq_worker, brooq_admin;

-- The partitions of the cluster `brooq`, in PL/Proxy's order (number 0, 1, ...).
create table brooq_proxy.partition (
    number   integer     not null,
    connstr  text        not null,
    added_at timestamptz not null default pg_catalog.now(),
    constraint partition_pkey primary key (number),
    constraint partition_number_range check (number between 0 and 32766)
);
comment on table brooq_proxy.partition is
'The partitions of the PL/Proxy cluster brooq (private: use brooq_proxy.add_partition and the view brooq_proxy.partitions).';
revoke all on table brooq_proxy.partition from public;

create view brooq_proxy.partitions as
select p.number, p.connstr, p.added_at,
       (p.number::bigint << 48) + 1 as first_job_id
  from brooq_proxy.partition p;
comment on view brooq_proxy.partitions is
'The partitions of the cluster brooq: number, libpq connection string, when added, the first job id it hands out.';
revoke all on brooq_proxy.partitions from public;

-- The configuration API PL/Proxy calls (doc/config.md of PL/Proxy). They run as
-- their owner: a caller needs neither the table nor the connection strings.
create function plproxy.get_cluster_version(cluster_name text)
returns integer
language sql
stable
security definer
set search_path = pg_catalog, pg_temp
as $$
    -- Partitions are only ever added, so their count is a version that only grows.
    select pg_catalog.count(*)::integer from brooq_proxy.partition
     where get_cluster_version.cluster_name = 'brooq';
$$;

create function plproxy.get_cluster_partitions(cluster_name text)
returns setof text
language plpgsql
stable
security definer
set search_path = pg_catalog, pg_temp
as $$
begin
    if get_cluster_partitions.cluster_name is distinct from 'brooq' then
        raise exception 'PL/Proxy cluster "%" is not defined here', left(get_cluster_partitions.cluster_name, 100)
            using errcode = 'undefined_object',
                  hint = 'This router defines one cluster, brooq.';
    end if;
    if not exists (select from brooq_proxy.partition) then
        raise exception 'the router has no partition yet'
            using errcode = 'object_not_in_prerequisite_state',
                  hint = 'Add one with brooq_proxy.add_partition(connstr => ...).';
    end if;
    return query select p.connstr from brooq_proxy.partition p order by p.number;
end
$$;

create function plproxy.get_cluster_config(in cluster_name text, out key text, out val text)
returns setof record
language sql
stable
security definer
set search_path = pg_catalog, pg_temp
as $$
    -- modular_mapping: any number of partitions, hash % count (not only powers of two).
    -- connection_lifetime: reconnect every 10 minutes (a moved partition is picked up).
    values ('modular_mapping'::text, '1'::text), ('connection_lifetime', '600');
$$;

revoke all on function plproxy.get_cluster_version(text) from public;
revoke all on function plproxy.get_cluster_partitions(text) from public;
revoke all on function plproxy.get_cluster_config(text) from public;
grant execute on function plproxy.get_cluster_version(text),
                          plproxy.get_cluster_partitions(text),
                          plproxy.get_cluster_config(text)
   to brooq_producer, brooq_worker, brooq_admin;

-- The partition that holds a job: the top bits of its id (see add_partition).
-- NULL maps to partition 0, whose own function then raises its documented error.
create function brooq_proxy.partition_of(job_id bigint)
returns integer
language sql
immutable
parallel safe
set search_path = pg_catalog, pg_temp
as $$
    select coalesce(partition_of.job_id >> 48, 0)::integer;
$$;
comment on function brooq_proxy.partition_of(bigint) is
'The partition number encoded in a job id (id >> 48): the partition that holds the job.';

-- Where a new job goes: a hash of (topic, group) when the job is in an ordered
-- group, so that a group's jobs stay on one partition and keep their order; else a
-- hash of (topic, key) when there is an idempotency key, so that the same key always
-- meets its first job on the same partition; a random partition otherwise ('' is no
-- key and no group, as in brooq.enqueue). Topic names cannot hold a newline.
create function brooq_proxy.route(topic text, idempotency_key text, group_key text)
returns integer
language sql
volatile
parallel safe
set search_path = pg_catalog, pg_temp
as $$
    select case when route.group_key is not null and route.group_key <> ''
                then pg_catalog.hashtext(coalesce(route.topic, '') || E'\n' || route.group_key)
                when route.idempotency_key is not null and route.idempotency_key <> ''
                then pg_catalog.hashtext(coalesce(route.topic, '') || E'\n' || route.idempotency_key)
                else pg_catalog.floor(pg_catalog.random() * 2147483647)::integer
           end;
$$;
comment on function brooq_proxy.route(text, text, text) is
'The hash that routes a new job: hashtext(topic, group) in a group, hashtext(topic, key) with a key, random otherwise.';

revoke all on function brooq_proxy.partition_of(bigint) from public;
revoke all on function brooq_proxy.route(text, text, text) from public;
grant execute on function brooq_proxy.partition_of(bigint), brooq_proxy.route(text, text, text)
   to brooq_producer, brooq_worker, brooq_admin;

-- On a new partition: start its job ids at base + 1, after checking that no job
-- it already holds lies outside [base, base + 2^48). Returns the next id, or no
-- row when such a job exists. Sent to the partition over PL/Proxy's CONNECT.
create function brooq_proxy._start_ids(connstr text, base bigint)
returns setof bigint
language plproxy
as $$
    connect connstr;
    select pg_catalog.setval(pg_catalog.pg_get_serial_sequence('brooq.job', 'id'),
                             greatest(base + 1,
                                                 (select pg_catalog.max(j.id) + 1 from brooq.job j)),
                             false) as _start_ids
     where not exists (select from brooq.job j
                        where j.id <= base or j.id > base + 281474976710655);
$$;
comment on function brooq_proxy._start_ids(text, bigint) is
'Private to brooq_proxy.add_partition: moves a partition''s job id sequence into its range.';
revoke all on function brooq_proxy._start_ids(text, bigint) from public;

create function brooq_proxy.add_partition(connstr text)
returns integer
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
    v_number integer;
    v_next bigint;
begin
    if add_partition.connstr is null or add_partition.connstr = '' then
        raise exception 'brooq_proxy.add_partition: connstr must not be NULL or empty'
            using errcode = 'null_value_not_allowed',
                  hint = 'Pass a libpq connection string of a database where brooq is deployed.';
    end if;
    lock table brooq_proxy.partition in exclusive mode;
    if exists (select from brooq_proxy.partition p where p.connstr = add_partition.connstr) then
        raise exception 'partition "%" is already in the cluster', left(add_partition.connstr, 200)
            using errcode = 'unique_violation',
                  hint = 'See select * from brooq_proxy.partitions.';
    end if;
    select coalesce(max(p.number) + 1, 0) into v_number from brooq_proxy.partition p;
    if v_number > 32766 then
        raise exception 'the router already has % partitions', v_number
            using errcode = 'program_limit_exceeded',
                  hint = 'Job ids keep 15 bits for the partition number.';
    end if;
    select s into v_next from brooq_proxy._start_ids(add_partition.connstr, v_number::bigint << 48) as s;
    if v_next is null then
        raise exception 'partition "%" holds job ids outside the range of partition %',
                        left(add_partition.connstr, 200), v_number
            using errcode = 'object_not_in_prerequisite_state',
                  hint = 'Add a fresh brooq database, or a single node as partition 0 of a new router.';
    end if;
    insert into brooq_proxy.partition (number, connstr) values (v_number, add_partition.connstr);
    return v_number;
end
$$;
comment on function brooq_proxy.add_partition(text) is
'Adds a brooq database to the cluster brooq as the next partition and starts its job ids at number * 2^48 + 1; returns the number.';
revoke all on function brooq_proxy.add_partition(text) from public;

commit;
