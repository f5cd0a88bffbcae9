-- Shape "row": today's storage, reduced to the hot path. One mutable row per job;
-- claim and settle update it; a partial index holds the ready jobs in claim order.
-- Per job: 3 heap tuples (insert, claim, settle), 6 index entries (pkey, ready,
-- lease, terminal, and the pkey and lease entries of the non-HOT updates).
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
) with (fillfactor = 90, autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000,
        autovacuum_vacuum_insert_scale_factor = 0.01, autovacuum_vacuum_cost_delay = 1);
create index job_ready_idx on proto.job (topic, priority desc, available_at, id)
    where state in ('pending', 'failed');
create index job_lease_idx on proto.job (locked_until) where locked_until is not null;
create index job_terminal_idx on proto.job (topic, updated_at) where state in ('done', 'dead', 'canceled');

create function proto.enqueue(p_topic text, p_payloads jsonb[]) returns bigint
language sql as $$
    with ins as (insert into proto.job (topic, payload) select p_topic, p from unnest(p_payloads) p returning id)
    select count(*) from ins
$$;

create function proto.claim(p_topic text, p_max integer, p_lease interval)
returns table (id bigint, lease_token bigint, payload jsonb)
language sql as $$
    with c as (
        select j.id from proto.job j
         where j.state in ('pending', 'failed') and j.topic = p_topic and j.available_at <= now()
         order by j.priority desc, j.available_at, j.id
         limit p_max
           for no key update skip locked)
    update proto.job j
       set state = 'processing', attempts = j.attempts + 1,
           lease_token = j.lease_token + 1, locked_until = now() + p_lease, updated_at = now()
      from c where j.id = c.id
    returning j.id, j.lease_token, j.payload
$$;

create function proto.settle(p_ids bigint[], p_tokens bigint[]) returns bigint
language sql as $$
    with s as (
        update proto.job j set state = 'done', locked_until = null, updated_at = now(), result = '{}'
          from unnest(p_ids, p_tokens) as t(id, token)
         where j.id = t.id and j.lease_token = t.token and j.state = 'processing'
        returning 1)
    select count(*) from s
$$;

create procedure proto.rotate() language sql as $$ select 0 $$;

create view proto.job_fate as select j.id, j.topic, j.payload, j.state, j.result from proto.job j;
