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

-- Whether a libpq connection string carries a secret. PL/Proxy reads the partitions'
-- connection strings through plproxy.get_cluster_partitions as the caller, so every
-- role that may call a router function can read them: a password in one is every
-- producer's. The string is read as libpq reads it (conninfo_parse and
-- conninfo_uri_parse_options in libpq's fe-connect.c): in key/value form, any keyword
-- ending in "password" or "secret" (password, sslpassword, oauth_client_secret), in
-- any case, whatever the spacing and quoting of its value; in a URI, the password of
-- user:password@, and any query keyword that percent-decodes to such a name. Where
-- this reading differs from libpq's it finds more (a URI scheme in any case, a query
-- keyword after any ? or &), never less; a string libpq cannot parse never connects.
create function brooq_proxy.connstr_has_password(connstr text)
returns boolean
language plpgsql
immutable
strict
parallel safe
set search_path = pg_catalog, pg_temp
as $$
declare
    v_blank constant text := E' \t\n\r\f' || pg_catalog.chr(11);  -- C's isspace
    v_backslash constant text := pg_catalog.chr(92);
    v_secret constant text := '(password|secret)$';
    v_s constant text := connstr_has_password.connstr;
    v_n constant integer := pg_catalog.length(v_s);
    v_i integer := 1;
    v_start integer;
    v_key text;
    v_rest text;
    v_userinfo text;
begin
    if v_s operator(pg_catalog.~*) '^postgres(ql)?://' then
        v_rest := pg_catalog.substr(v_s, pg_catalog.strpos(v_s, '://') + 3);
        -- user[:password]@ is what precedes the first @ met before any /; it holds a
        -- password when a : in it is followed by at least one character.
        v_userinfo := pg_catalog.substring(v_rest, '^([^@/]*)@');
        if v_userinfo operator(pg_catalog.~) ':.' then
            return true;
        end if;
        if v_userinfo is not null then
            v_rest := pg_catalog.substr(v_rest, pg_catalog.length(v_userinfo) + 2);
        end if;
        -- ?key=value&key=value: each keyword percent-decoded (libpq refuses %00).
        for v_key in
            select (select pg_catalog.string_agg(
                               case when d.m[1] is null then d.m[2]
                                    when d.m[1] = '00' then ''
                                    else pg_catalog.chr(('x' || d.m[1])::bit(8)::integer)
                               end, '' order by d.o)
                      from pg_catalog.regexp_matches(q.k, '%([0-7][0-9A-Fa-f])|([^%]+|%)', 'g')
                           with ordinality as d(m, o))
              from (select pg_catalog.substring(part, '^([^=]*)=') as k
                      from pg_catalog.regexp_split_to_table(v_rest, '[?&]') as part) as q
             where q.k <> ''
        loop
            if v_key operator(pg_catalog.~*) v_secret then
                return true;
            end if;
        end loop;
        return false;
    end if;
    -- keyword = value, keyword = 'quoted \' value', value\ with\ escaped\ blanks
    while v_i <= v_n loop
        if pg_catalog.strpos(v_blank, pg_catalog.substr(v_s, v_i, 1)) > 0 then
            v_i := v_i + 1;
            continue;
        end if;
        v_start := v_i;
        while v_i <= v_n and pg_catalog.substr(v_s, v_i, 1) <> '='
              and pg_catalog.strpos(v_blank, pg_catalog.substr(v_s, v_i, 1)) = 0 loop
            v_i := v_i + 1;
        end loop;
        v_key := pg_catalog.substr(v_s, v_start, v_i - v_start);
        while v_i <= v_n and pg_catalog.strpos(v_blank, pg_catalog.substr(v_s, v_i, 1)) > 0 loop
            v_i := v_i + 1;
        end loop;
        if v_i > v_n or pg_catalog.substr(v_s, v_i, 1) <> '=' then
            return false;  -- no "=" after the keyword: libpq refuses the string
        end if;
        if v_key operator(pg_catalog.~*) v_secret then
            return true;
        end if;
        v_i := v_i + 1;
        while v_i <= v_n and pg_catalog.strpos(v_blank, pg_catalog.substr(v_s, v_i, 1)) > 0 loop
            v_i := v_i + 1;
        end loop;
        if v_i <= v_n and pg_catalog.substr(v_s, v_i, 1) = '''' then
            v_i := v_i + 1;
            loop
                if v_i > v_n then
                    return false;  -- an unterminated quote: libpq refuses the string
                elsif pg_catalog.substr(v_s, v_i, 1) = v_backslash then
                    v_i := v_i + 2;
                elsif pg_catalog.substr(v_s, v_i, 1) = '''' then
                    v_i := v_i + 1;
                    exit;
                else
                    v_i := v_i + 1;
                end if;
            end loop;
        else
            while v_i <= v_n and pg_catalog.strpos(v_blank, pg_catalog.substr(v_s, v_i, 1)) = 0 loop
                v_i := v_i + case when pg_catalog.substr(v_s, v_i, 1) = v_backslash then 2 else 1 end;
            end loop;
        end if;
    end loop;
    return false;
end
$$;
comment on function brooq_proxy.connstr_has_password(text) is
'Whether a libpq connection string (key/value or URI) carries a password or another secret: brooq_proxy.add_partition refuses one.';
revoke all on function brooq_proxy.connstr_has_password(text) from public;

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
    -- Every role that may call the router reads the connection strings (see
    -- connstr_has_password): the message names no part of this one.
    if brooq_proxy.connstr_has_password(add_partition.connstr) then
        raise exception 'brooq_proxy.add_partition: a connection string with a password is refused: every role that may call the router can read it'
            using errcode = 'invalid_parameter_value',
                  hint = 'Leave the password out: put it in the password file of the router server''s operating-system user (~/.pgpass, or passfile=... in the connection string), or in a service file named by service=...';
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
    -- The cluster's topics before any traffic: the partition joins the list (and
    -- takes enqueues) only when this transaction commits. The router's topic calls
    -- wait for this lock (brooq_proxy._hold_partitions), so none is missed.
    -- (brooq_proxy._cluster_topics and _copy_topics come with the change router.)
    if v_number > 0 then
        perform brooq_proxy._copy_topics(add_partition.connstr, brooq_proxy._cluster_topics());
    end if;
    insert into brooq_proxy.partition (number, connstr) values (v_number, add_partition.connstr);
    return v_number;
end
$$;
comment on function brooq_proxy.add_partition(text) is
'Adds a brooq database to the cluster brooq as the next partition, starts its job ids at number * 2^48 + 1 and declares the cluster''s topics on it (settings, paused) before it takes traffic; returns the number.';
revoke all on function brooq_proxy.add_partition(text) from public;

commit;
