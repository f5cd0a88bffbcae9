-- brooq.flush: structure, behaviour (queued jobs by default, finished ones when
-- asked, never processing, other topics untouched, keys free again), errors with
-- nothing deleted, then privileges under switched roles.
begin;
select plan(22);

select has_function('brooq', 'flush', array['text', 'text[]']);
select function_returns('brooq', 'flush', array['text', 'text[]'], 'bigint', 'flush returns the count');
select is_definer('brooq', 'flush', array['text', 'text[]']);

set local brooq.now = '2030-01-01 00:00:00+00';
select lives_ok($$ select brooq.declare_topic('t.flush'), brooq.declare_topic('t.flush.other') $$, 'two topics');
-- one job in every state of t.flush, and a pending one elsewhere
insert into brooq.job (topic, payload, state, max_attempts, idempotency_key, available_at, created_at, updated_at,
                       locked_by, locked_until)
select 't.flush', jsonb_build_object('s', s), s, 5, 'k-' || s, now(), now(), now(),
       case when s = 'processing' then 'w1' end, case when s = 'processing' then now() + interval '1 minute' end
  from unnest(array['pending', 'pending', 'failed', 'processing', 'done', 'dead', 'canceled']) with ordinality as u(s, n)
 where n <> 2;
insert into brooq.job (topic, payload, state, max_attempts, available_at, created_at, updated_at)
values ('t.flush', '{}', 'pending', 5, now(), now(), now()),
       ('t.flush.other', '{}', 'pending', 5, now(), now(), now());

select is(brooq.flush('t.flush'), 3::bigint, 'flush deletes the queued jobs: 2 pending, 1 failed');
select set_eq($$ select state::text from brooq.job where topic = 't.flush' $$,
    array['processing', 'done', 'dead', 'canceled'], 'processing and finished jobs stay');
select is((select count(*)::int from brooq.job where topic = 't.flush.other'), 1, 'another topic is untouched');
select results_eq($$ select created from brooq.enqueue('t.flush', '{}', idempotency_key => 'k-pending') $$,
    array[true], 'the key of a flushed job is free again');
select is(brooq.flush('t.flush', array['done', 'dead', 'canceled']), 3::bigint, 'flush completed: done, dead, canceled');
select set_eq($$ select state::text from brooq.job where topic = 't.flush' $$,
    array['processing', 'pending'], 'the processing job and the new pending one stay');
select is(brooq.flush('t.flush', array['done']), 0::bigint, 'nothing to flush: 0');

-- errors: nothing deleted
select throws_ok($$ select brooq.flush('t.flush', array['pending', 'processing']) $$, '22023',
    'cannot flush state "processing"', 'processing is refused');
select throws_ok($$ select brooq.flush('t.flush', array['pending', 'runing']) $$, '22023',
    'cannot flush state "runing"', 'an unknown state is refused');
select throws_ok($$ select brooq.flush('t.flush', array['pending', null]) $$, '22023',
    'cannot flush state "NULL"', 'a NULL state is refused');
select throws_ok($$ select brooq.flush('t.flush', '{}') $$, '22023', 'cannot flush state ""', 'no state is refused');
select throws_ok($$ select brooq.flush('t.nope') $$, '42704', 'topic "t.nope" does not exist', 'an unknown topic');
select throws_ok($$ select brooq.flush(null) $$, '22004', 'brooq.flush: topic and states must not be NULL', 'NULL topic');
select throws_ok($$ select brooq.flush('t.flush', null) $$, '22004', 'brooq.flush: topic and states must not be NULL',
    'NULL states');
select is((select count(*)::int from brooq.job where topic = 't.flush' and state = 'pending'), 1,
    'the refused calls deleted nothing');

-- privileges
set local role brooq_worker;
select throws_ok($$ select brooq.flush('t.flush') $$, '42501', 'permission denied for function flush', 'worker: no flush');
reset role;
set local role brooq_producer;
select throws_ok($$ select brooq.flush('t.flush') $$, '42501', 'permission denied for function flush', 'producer: no flush');
reset role;
set local role brooq_admin;
select is(brooq.flush('t.flush'), 1::bigint, 'admin: flush');
reset role;

select * from finish();
rollback;
