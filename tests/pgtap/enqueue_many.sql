-- brooq.enqueue_many: structure, behaviour (input order, created flags, keys
-- inside and across batches, every error naming its element, nothing written on
-- error), then privileges under switched roles.
begin;
select plan(38);

-- Structure -------------------------------------------------------------------

select has_function('brooq', 'enqueue_many',
    array['text', 'jsonb[]', 'text[]', 'timestamp with time zone', 'integer', 'interval', 'text[]', 'jsonb', 'integer[]', 'bigint[]', 'text']);
select function_returns('brooq', 'enqueue_many',
    array['text', 'jsonb[]', 'text[]', 'timestamp with time zone', 'integer', 'interval', 'text[]', 'jsonb', 'integer[]', 'bigint[]', 'text'],
    'setof brooq.enqueued', 'enqueue_many returns setof brooq.enqueued');
select is_definer('brooq', 'enqueue_many',
    array['text', 'jsonb[]', 'text[]', 'timestamp with time zone', 'integer', 'interval', 'text[]', 'jsonb', 'integer[]', 'bigint[]', 'text']);

-- Behaviour ----------------------------------------------------------------------

set local brooq.now = '2030-01-01 00:00:00+00';
select lives_ok($$ select brooq.declare_topic('t.many', max_attempts => 4) $$, 'declare the topic');
select lives_ok($$ select brooq.declare_topic('t.many.small', max_payload_bytes => 1000) $$, 'declare a topic with a 1000-byte limit');

create temp table batch1 on commit drop as
select e.id, e.created, e.ord
  from brooq.enqueue_many('t.many', array['{"n": 1}', '{"n": 2}', '{"n": 3}', '{"n": 4}']::jsonb[])
       with ordinality as e(id, created, ord);
select results_eq(
    $$ select b.ord, j.payload ->> 'n', b.created from batch1 b join brooq.job j on j.id = b.id order by b.ord $$,
    $$ values (1::bigint, '1', true), (2, '2', true), (3, '3', true), (4, '4', true) $$,
    'one row per payload, in input order, each naming its own job, all created');
select is((select count(distinct id)::int from batch1), 4, 'four distinct jobs');
select results_eq(
    $$ select distinct state::text, attempts, max_attempts, priority, available_at, created_at, lease_token
         from brooq.job where id in (select id from batch1) $$,
    $$ values ('pending'::text, 0, 4, 0, timestamptz '2030-01-01 00:00:00+00', timestamptz '2030-01-01 00:00:00+00', 0::bigint) $$,
    'every job is pending, ready now, with the topic''s max_attempts');

select is_empty($$ select * from brooq.enqueue_many('t.many', array[]::jsonb[]) $$, 'an empty array enqueues nothing');
select is_empty($$ select * from brooq.enqueue_many('t.many', '{}', '{}') $$, 'empty payloads and empty keys enqueue nothing');

select id as existing from brooq.enqueue('t.many', '{"n": "old"}', idempotency_key => 'k-old') \gset
create temp table batch2 on commit drop as
select e.id, e.created, e.ord
  from brooq.enqueue_many('t.many',
           array['{"n": "a"}', '{"n": "b"}', '{"n": "c"}', '{"n": "d"}', '{"n": "e"}', '{"n": "f"}']::jsonb[],
           array['k-old', 'k-new', null, '', 'k-dup', 'k-dup'])
       with ordinality as e(id, created, ord);
select results_eq(
    $$ select ord, created from batch2 order by ord $$,
    $$ values (1::bigint, false), (2, true), (3, true), (4, true), (5, true), (6, false) $$,
    'created flags: existing key false, new key true, NULL and empty keys true, a key repeated in the batch false after the first');
select is((select id from batch2 where ord = 1), :existing::bigint, 'an existing key returns the existing id');
select is((select payload from brooq.job where id = :existing), '{"n": "old"}'::jsonb, 'and keeps its payload');
select is((select id from batch2 where ord = 6), (select id from batch2 where ord = 5),
    'a key repeated inside the batch gets the first occurrence''s id');
select is((select payload from brooq.job where id = (select id from batch2 where ord = 5)), '{"n": "e"}'::jsonb,
    'the first occurrence of a repeated key wins');
select is((select count(*)::int from brooq.job where topic = 't.many' and idempotency_key = 'k-dup'), 1,
    'one row for the repeated key');
select is((select idempotency_key from brooq.job where id = (select id from batch2 where ord = 4)), null,
    'an empty key is stored as no key');
create temp table batch3 on commit drop as
select e.id, e.created, e.ord
  from brooq.enqueue_many('t.many',
           array(select jsonb_build_object('i', n) from generate_series(1, 300) n),
           array(select 'many-' || (n * 7919 % 13) from generate_series(1, 300) n))
       with ordinality as e(id, created, ord);
select results_eq(
    $$ select b.ord, b.created, (j.payload ->> 'i')::bigint
         from batch3 b join brooq.job j on j.id = b.id
        where b.created or b.ord <= 40
        order by b.ord $$,
    $$ select n::bigint, first, first_n::bigint
         from (select n, n = min(n) over (partition by n * 7919 % 13) as first,
                      min(n) over (partition by n * 7919 % 13) as first_n
                 from generate_series(1, 300) n) s
        where first or n <= 40
        order by n $$,
    'in a large batch of repeated keys, each key''s first occurrence is created and every repeat gets its id');
select results_eq(
    $$ select e.id, e.created from brooq.enqueue_many('t.many', array['{}', '{}']::jsonb[], array['k-new', 'k-dup']) e $$,
    $$ select id, false from batch2 where ord in (2, 5) order by ord $$,
    'repeating the batch''s keys in a new batch returns the same ids, created = false');

select array_agg(id) as later from brooq.enqueue_many('t.many', array['{}', '{}']::jsonb[], priority => 9, delay => '1 hour') \gset
select results_eq(
    $$ select distinct priority, available_at from brooq.job where id = any ('$$ || :'later' || $$'::bigint[]) $$,
    $$ values (9, timestamptz '2030-01-01 01:00:00+00') $$,
    'priority and delay apply to every job of the batch');
select array_agg(id) as at from brooq.enqueue_many('t.many', array['{}']::jsonb[], available_at => '2031-01-01 00:00:00+00') \gset
select is((select available_at from brooq.job where id = any (:'at'::bigint[])), timestamptz '2031-01-01 00:00:00+00',
    'available_at applies to the batch');

-- Errors, and nothing written ----------------------------------------------------

select results_eq($$ select created from brooq.enqueue_many('t.many.small', array[to_jsonb(repeat('x', 998))]) $$,
    array[true], 'an element of exactly max_payload_bytes (1000) is accepted');
select count(*) as before from brooq.job where topic like 't.many%' \gset
select throws_ok($$ select brooq.enqueue_many('t.many', array['{}', '{}']::jsonb[], array['a']) $$, '22023',
    'idempotency_keys has 1 elements, payloads has 2', 'keys of another length are 22023');
select throws_ok($$ select brooq.enqueue_many('t.many', array['{}']::jsonb[], array[]::text[]) $$, '22023',
    'idempotency_keys has 0 elements, payloads has 1', 'an empty keys array for one payload is 22023');
select throws_ok($$ select brooq.enqueue_many('t.many', array['{}', null, '{}']::jsonb[]) $$, '22004',
    'payload 2 of 3 is NULL', 'a NULL payload element is 22004 and names its index');
select throws_ok($$ select brooq.enqueue_many('t.many.small', array['{}', '{}', to_jsonb(repeat('x', 999))]::jsonb[]) $$, '54000',
    'payload 3 of 3 is 1001 bytes, larger than the 1000 bytes allowed for topic "t.many.small"',
    'an oversize element is 54000 and names its index');
select throws_ok(format($$ select brooq.enqueue_many('t.many', array['{}', '{}']::jsonb[], array['ok', %L]) $$, repeat('k', 256)),
    '22023', format('idempotency key 2 ("%s...") is 256 characters long', repeat('k', 40)),
    'a key over 255 characters is 22023 and names its index');
select throws_ok($$ select brooq.enqueue_many('t.missing', array['{}']::jsonb[]) $$, '42704',
    'topic "t.missing" does not exist', 'an unknown topic is 42704');
select throws_ok($$ select brooq.enqueue_many(null, array['{}']::jsonb[]) $$, '22004',
    'brooq.enqueue_many: topic, payloads and priority must not be NULL', 'a NULL topic is 22004');
select throws_ok($$ select brooq.enqueue_many('t.many', null) $$, '22004', null, 'a NULL payloads array is 22004');
select throws_ok($$ select brooq.enqueue_many('t.many', array['{}']::jsonb[], priority => null) $$, '22004', null,
    'a NULL priority is 22004');
select throws_ok($$ select brooq.enqueue_many('t.many', array['{}']::jsonb[], available_at => 'infinity') $$, '22023',
    'invalid available_at infinity', 'an infinite available_at is 22023');
select throws_ok($$ select brooq.enqueue_many('t.many', array['{}']::jsonb[], delay => '-1 minute') $$, '22023',
    'invalid delay -00:01:00', 'a negative delay is 22023');
select throws_ok($$ select brooq.enqueue_many('t.many', array['{}']::jsonb[], available_at => now(), delay => '1 minute') $$,
    '22023', null, 'available_at and delay together are 22023');
select is((select count(*) from brooq.job where topic like 't.many%'), :before::bigint,
    'no failed batch wrote any job, not even its valid elements');

-- Privileges ---------------------------------------------------------------------

set local role brooq_producer;
select results_eq($$ select count(*)::int from brooq.enqueue_many('t.many', array['{}', '{}', '{}']::jsonb[]) $$,
    array[3], 'brooq_producer can enqueue a batch');
reset role;

set local role brooq_worker;
select throws_ok($$ select brooq.enqueue_many('t.many', array['{}']::jsonb[]) $$, '42501',
    'permission denied for function enqueue_many', 'brooq_worker cannot enqueue a batch');
reset role;

set local role brooq_admin;
select results_eq($$ select count(*)::int from brooq.enqueue_many('t.many', array['{}']::jsonb[]) $$,
    array[1], 'brooq_admin can enqueue a batch');
reset role;

select * from finish();
rollback;
