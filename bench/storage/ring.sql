-- Shape "ring": the job's row stays the one place of its fate, but no index of it
-- names a column that claim or settle change (pkey only), so both updates are HOT;
-- claim order lives in a ring of ready partitions, a row per ready job, deleted by
-- its claim, each partition TRUNCATEd once its slot has passed and it is empty.
-- Per job: 4 heap tuples (job insert + 2 HOT versions, one ready row), 2 index
-- entries (pkey, ready). Under a pinned horizon a claim walks the dead ready
-- entries of the partitions not yet truncated only: TRUNCATE ignores the horizon.
create schema proto;

create table proto.job (
    id           bigint      generated always as identity primary key,
    topic        text        not null,
    payload      jsonb       not null,
    state        text        not null default 'pending',
    priority     integer     not null default 0,
    attempts     integer     not null default 0,
    available_at timestamptz not null default now(),
    lease_token  bigint      not null default 0,
    locked_until timestamptz,
    result       jsonb,
    updated_at   timestamptz not null default now()
) with (fillfactor = 50, autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000,
        autovacuum_vacuum_insert_scale_factor = 0.01, autovacuum_vacuum_cost_delay = 1);

-- slot: the ring's slot of the moment the row was written (slot_of); 8 slots of 2 s
create table proto.ready (
    slot         integer     not null,
    topic        text        not null,
    priority     integer     not null,
    available_at timestamptz not null,
    job_id       bigint      not null
) partition by list (slot);
do $$ begin
    for s in 0..7 loop
        execute format('create table proto.ready_%s partition of proto.ready for values in (%s)'
                       ' with (autovacuum_enabled = off)', s, s);
    end loop;
end $$;
create index ready_claim_idx on proto.ready (topic, priority desc, available_at, job_id);

-- a retired slot: drained, no writer left, but not truncated yet (a reader holds it);
-- claims skip it (run-time partition pruning) until its time comes round again
create table proto.ring (slot integer primary key, retired boolean not null default false);
insert into proto.ring select s from generate_series(0, 7) s;


create function proto.slot_of(t timestamptz) returns integer immutable language sql as $$
    select (floor(extract(epoch from t) / 2)::bigint % 8)::integer
$$;

create function proto.enqueue(p_topic text, p_payloads jsonb[]) returns bigint
language sql as $$
    with ins as (insert into proto.job (topic, payload) select p_topic, p from unnest(p_payloads) p
                 returning id, topic, priority, available_at),
         r as (insert into proto.ready (slot, topic, priority, available_at, job_id)
               select proto.slot_of(clock_timestamp()), topic, priority, available_at, id from ins
               returning 1)
    select count(*) from r
$$;

-- the slots' list is spliced into the statement so that the planner prunes retired
-- partitions (a parameter would leave their dead entries to walk)
create function proto.claim(p_topic text, p_max integer, p_lease interval)
returns table (id bigint, lease_token bigint, payload jsonb)
language plpgsql
as $$
declare
    v_slots text := (select string_agg(s.slot::text, ',') from proto.ring s where not s.retired);
begin
    return query execute format($q$
    with c as (
        select r.tableoid, r.ctid from proto.ready r
         where r.slot in (%s) and r.topic = $1 and r.available_at <= now()
         order by r.priority desc, r.available_at, r.job_id
         limit $2
           for update skip locked),
    gone as (
        delete from proto.ready r using c
         where r.tableoid = c.tableoid and r.ctid = c.ctid
        returning r.job_id)
    update proto.job j
       set state = 'processing', attempts = j.attempts + 1,
           lease_token = j.lease_token + 1, locked_until = now() + $3, updated_at = now()
      from gone g where j.id = g.job_id
    returning j.id, j.lease_token, j.payload$q$, v_slots) using p_topic, p_max, p_lease;
end $$;

create function proto.settle(p_ids bigint[], p_tokens bigint[]) returns bigint
language sql as $$
    with s as (
        update proto.job j set state = 'done', locked_until = null, updated_at = now(), result = '{}'
          from unnest(p_ids, p_tokens) as t(id, token)
         where j.id = t.id and j.lease_token = t.token and j.state = 'processing'
        returning 1)
    select count(*) from s
$$;

-- Each slot neither current, nor the one before, nor one of the next two: TRUNCATE it
-- when no transaction holds it (lock_timeout) and it holds no ready row. When a
-- transaction holds it, retire it if that holder is no writer (no ROW EXCLUSIVE lock:
-- a reader, e.g. pg_dump) and it holds no ready row: claims skip it. The next slot
-- but one is brought back before its time comes. One transaction per slot, so a claim
-- waits for one slot's lock at most.
create procedure proto.rotate()
language plpgsql as $$
declare
    v_now integer := proto.slot_of(clock_timestamp());
begin
    update proto.ring set retired = false where slot = (v_now + 2) % 8 and retired;
    commit;
    for s in 0..7 loop
        continue when s in (v_now, (v_now + 7) % 8, (v_now + 1) % 8, (v_now + 2) % 8);
        begin
            set local lock_timeout = '20ms';
            execute format('lock table proto.ready_%s in access exclusive mode', s);
            if not exists (select from proto.ready r where r.slot = s) then
                execute format('truncate proto.ready_%s', s);
                update proto.ring set retired = false where slot = s and retired;
            end if;
        exception when lock_not_available then
            if not exists (select from pg_locks l
                            where l.relation = format('proto.ready_%s', s)::regclass
                              and l.mode = 'RowExclusiveLock')
               and not exists (select from proto.ready r where r.slot = s) then
                update proto.ring set retired = true where slot = s and not retired;
            end if;
        end;
        commit;
    end loop;
end $$;

create view proto.job_fate as select j.id, j.topic, j.payload, j.state, j.result from proto.job j;
