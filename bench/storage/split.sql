-- Shape "split": nothing on the hot path is ever updated. The job's row is written
-- once (what was enqueued); the ready ring holds a row per ready job (deleted by its
-- claim); the lease ring a row per claim (written once, never updated: a heartbeat
-- would append); the outcome a row per finished job, written once (its primary key
-- is the "exactly once"). A job's fate is a view over the three. Rings are TRUNCATEd
-- slot by slot: ready once empty, lease once each of its claims has its outcome.
-- Per job: 4 heap tuples (job, ready, lease, outcome), 4 index entries; the only
-- dead ones are claimed ready rows, in partitions not yet truncated.
create schema proto;

create table proto.job (
    id           bigint      generated always as identity primary key,
    topic        text        not null,
    payload      jsonb       not null,
    priority     integer     not null default 0,
    created_at   timestamptz not null default now()
) with (autovacuum_vacuum_insert_scale_factor = 0.01);

create table proto.outcome (
    job_id     bigint      primary key,
    lease_token bigint     not null,
    state      text        not null,
    result     jsonb,
    at         timestamptz not null default now()
) with (autovacuum_vacuum_insert_scale_factor = 0.01);

create table proto.ready (
    slot         integer     not null,
    topic        text        not null,
    priority     integer     not null,
    available_at timestamptz not null,
    job_id       bigint      not null
) partition by list (slot);

create table proto.lease (
    slot         integer     not null,
    job_id       bigint      not null,
    lease_token  bigint      not null,
    locked_until timestamptz not null
) partition by list (slot);

do $$ begin
    for s in 0..7 loop
        execute format('create table proto.ready_%s partition of proto.ready for values in (%s)'
                       ' with (autovacuum_enabled = off)', s, s);
        execute format('create table proto.lease_%s partition of proto.lease for values in (%s)'
                       ' with (autovacuum_enabled = off)', s, s);
    end loop;
end $$;
create index ready_claim_idx on proto.ready (topic, priority desc, available_at, job_id);
create index lease_job_idx on proto.lease (job_id, lease_token);
create sequence proto.lease_token_seq cache 64;

create function proto.slot_of(t timestamptz) returns integer immutable language sql as $$
    select (floor(extract(epoch from t) / 2)::bigint % 8)::integer
$$;

create view proto.job_fate as
select j.id, j.topic, j.payload,
       coalesce(o.state,
                case when l.lease_token is not null then 'processing' else 'pending' end) as state,
       o.result
  from proto.job j
  left join proto.outcome o on o.job_id = j.id
  left join lateral (select l.lease_token from proto.lease l where l.job_id = j.id
                      order by l.lease_token desc limit 1) l on o.job_id is null;

create function proto.enqueue(p_topic text, p_payloads jsonb[]) returns bigint
language sql as $$
    with ins as (insert into proto.job (topic, payload) select p_topic, p from unnest(p_payloads) p
                 returning id, topic, priority, created_at),
         r as (insert into proto.ready (slot, topic, priority, available_at, job_id)
               select proto.slot_of(clock_timestamp()), topic, priority, created_at, id from ins
               returning 1)
    select count(*) from r
$$;

create function proto.claim(p_topic text, p_max integer, p_lease interval)
returns table (id bigint, lease_token bigint, payload jsonb)
language sql as $$
    with c as (
        select r.tableoid, r.ctid from proto.ready r
         where r.topic = p_topic and r.available_at <= now()
         order by r.priority desc, r.available_at, r.job_id
         limit p_max
           for update skip locked),
    gone as (
        delete from proto.ready r using c
         where r.tableoid = c.tableoid and r.ctid = c.ctid
        returning r.job_id),
    l as (
        insert into proto.lease (slot, job_id, lease_token, locked_until)
        select proto.slot_of(clock_timestamp()), g.job_id, nextval('proto.lease_token_seq'), now() + p_lease
          from gone g
        returning job_id, lease_token)
    select j.id, l.lease_token, j.payload from l join proto.job j on j.id = l.job_id
$$;

-- the outcome is written once: its primary key refuses a second; a stale token
-- (a newer lease of the job exists) writes nothing
create function proto.settle(p_ids bigint[], p_tokens bigint[]) returns bigint
language sql as $$
    with s as (
        insert into proto.outcome (job_id, lease_token, state, result)
        select t.id, t.token, 'done', '{}'
          from unnest(p_ids, p_tokens) as t(id, token)
         where not exists (select from proto.lease l where l.job_id = t.id and l.lease_token > t.token)
        on conflict (job_id) do nothing
        returning 1)
    select count(*) from s
$$;

create procedure proto.rotate()
language plpgsql as $$
declare
    v_now integer := proto.slot_of(clock_timestamp());
begin
    for s in 0..7 loop
        continue when s = v_now or s = (v_now + 7) % 8;
        begin
            set local lock_timeout = '20ms';
            execute format('lock table proto.ready_%s in access exclusive mode', s);
            if not exists (select from proto.ready r where r.slot = s) then
                execute format('truncate proto.ready_%s', s);
            end if;
        exception when lock_not_available then
            null;
        end;
        commit;
        begin
            set local lock_timeout = '20ms';
            execute format('lock table proto.lease_%s in access exclusive mode', s);
            if not exists (select from proto.lease l where l.slot = s
                            and not exists (select from proto.outcome o where o.job_id = l.job_id)) then
                execute format('truncate proto.lease_%s', s);
            end if;
        exception when lock_not_available then
            null;
        end;
        commit;
    end loop;
end $$;
