-- Ordered groups: enqueue(..., group_key) and enqueue_many(..., group_keys);
-- claim takes only the first active job of a group, so a group runs one job at a
-- time, in enqueue order; what holds a group (pending, failed waiting for a retry,
-- processing, an expired lease) and what frees it (done, dead, canceled, a reap to
-- dead); priority and available_at inside a group; ungrouped jobs and other topics
-- unaffected; with max_in_flight; topic_stats and errors. The races:
-- tests/test_flow_races.py.
begin;
select plan(54);

set local brooq.now = '2030-01-01 00:00:00+00';
select lives_ok($$ select brooq.declare_topic('t.g', max_attempts => 2) $$, 'a topic');
select lives_ok($$ select brooq.declare_topic('t.g2') $$, 'another topic');

-- a group of one ---------------------------------------------------------------------------

select id as solo from brooq.enqueue('t.g', '{"n": "solo"}', group_key => 'solo') \gset
select results_eq($$ select group_key, group_seq from brooq.job where id = $$ || :solo,
    $$ values ('solo'::text, 1::bigint) $$, 'the first job of a group gets group_seq 1');
select results_eq($$ select id from brooq.claim('w', array['t.g'], 1, '1 hour') $$, array[:solo::bigint],
    'a group of one is claimed like any job');
select lives_ok(format($$ select brooq.settle(%s, 'w', (select lease_token from brooq.job where id = %s), 'done') $$, :solo, :solo),
    'and settled');
select id as solo2 from brooq.enqueue('t.g', '{"n": "solo2"}', group_key => 'solo') \gset
select is((select group_seq from brooq.job where id = :solo2), 2::bigint, 'the next job of the group gets 2');
select results_eq($$ select id from brooq.claim('w', array['t.g'], 1, '1 hour') $$, array[:solo2::bigint],
    'and is claimed once the first is done');
select lives_ok(format($$ select brooq.settle(%s, 'w', (select lease_token from brooq.job where id = %s), 'done') $$, :solo2, :solo2),
    'and settled');

-- one at a time, in enqueue order, whatever the priority and available_at -------------------

select id as a1 from brooq.enqueue('t.g', '{"n": "a1"}', group_key => 'a', available_at => '2029-12-31 23:00:00+00') \gset
select id as a2 from brooq.enqueue('t.g', '{"n": "a2"}', group_key => 'a', priority => 10,
                                   available_at => '2029-12-31 22:00:00+00') \gset
select id as b1 from brooq.enqueue('t.g', '{"n": "b1"}', group_key => 'b') \gset
select id as free1 from brooq.enqueue('t.g', '{"n": "free1"}') \gset
select id as free2 from brooq.enqueue('t.g', '{"n": "free2"}', group_key => '') \gset
select is((select group_key from brooq.job where id = :free2), null, 'an empty group_key is no group');
select id as a3 from brooq.enqueue('t.g2', '{"n": "a3"}', group_key => 'a') \gset
select is((select group_seq from brooq.job where id = :a3), 1::bigint, 'the same key in another topic is another group');

select set_eq($$ select id from brooq.claim('w1', array['t.g', 't.g2'], 10, '1 hour') $$,
    array[:a1::bigint, :b1::bigint, :free1::bigint, :free2::bigint, :a3::bigint],
    'a claim of 10 takes the first job of each group and every ungrouped job: a2 waits for a1 despite its priority and earlier available_at');
select is_empty($$ select * from brooq.claim('w2', array['t.g'], 10, '1 hour') $$, 'a2 is not claimed while a1 is processing');
select results_eq($$ select ready, held_by_group from brooq.topic_stats where topic = 't.g' $$,
    $$ values (1::bigint, 1::bigint) $$, 'topic_stats: a2 is ready but held by its group');
select is((select group_key from brooq.jobs where id = :a2), 'a', 'brooq.jobs shows the group');

-- a failed job waiting for its retry holds its group
select is(brooq.settle(:a1, 'w1', (select lease_token from brooq.job where id = :a1), 'failed',
                       error => 'boom', delay => '1 minute')::text, 'failed', 'a1 fails, retry in a minute');
select is_empty($$ select * from brooq.claim('w2', array['t.g'], 10, '1 hour') $$, 'a2 still waits: a1 awaits its retry');
set local brooq.now = '2030-01-01 00:01:00+00';
select results_eq($$ select id from brooq.claim('w2', array['t.g'], 10, '1 hour') $$, array[:a1::bigint],
    'a1 is retried first, a2 still waits');
-- a dead job frees its group
select is(brooq.settle(:a1, 'w2', (select lease_token from brooq.job where id = :a1), 'failed', error => 'boom')::text,
    'dead', 'a1 fails its last attempt: dead');
select results_eq($$ select id from brooq.claim('w2', array['t.g'], 10, '1 hour') $$, array[:a2::bigint], 'a dead job frees its group: a2');

-- canceled frees; processing holds; an expired lease holds until reaped -------------------

select id as c1 from brooq.enqueue('t.g', '{"n": "c1"}', group_key => 'c') \gset
select id as c2 from brooq.enqueue('t.g', '{"n": "c2"}', group_key => 'c') \gset
select id as c3 from brooq.enqueue('t.g', '{"n": "c3"}', group_key => 'c') \gset
select ok(brooq.cancel(:c1), 'c1 canceled before it ran');
select results_eq($$ select id from brooq.claim('w3', array['t.g'], 10, '1 hour') $$, array[:c2::bigint], 'a canceled job frees its group: c2');
select ok(brooq.cancel(:c2), 'c2 canceled while processing');
select results_eq($$ select id from brooq.claim('w3', array['t.g'], 10, '1 hour') $$, array[:c3::bigint], 'c3 runs next');
update brooq.job set locked_until = '2030-01-01 00:00:30+00' where id = :c3;
select id as c4 from brooq.enqueue('t.g', '{"n": "c4"}', group_key => 'c') \gset
select is_empty($$ select * from brooq.claim('w4', array['t.g'], 10, '1 hour') $$, 'an expired lease still holds its group');
select results_eq($$ select id from brooq.reap() $$, array[:c3::bigint], 'reap returns c3');
select results_eq($$ select id from brooq.claim('w4', array['t.g'], 10, '1 hour') $$, array[:c3::bigint],
    'the reaped job is claimed again before the next of its group');
-- reap to dead (the poison pill) frees the group
select lives_ok($$ select brooq.declare_topic('t.g', max_attempts => 2, max_lease_losses => 2) $$, 'max_lease_losses 2');
update brooq.job set locked_until = '2030-01-01 00:00:30+00' where id = :c3;
select results_eq($$ select id from brooq.reap() $$, array[:c3::bigint], 'c3 reaped a second time');
select is((select state::text from brooq.job where id = :c3), 'dead', 'the second lease loss makes it dead');
select results_eq($$ select id from brooq.claim('w4', array['t.g'], 10, '1 hour') $$, array[:c4::bigint], 'a job dead by reap frees its group');

-- a delayed first job blocks its group ------------------------------------------------------

select id as d1 from brooq.enqueue('t.g', '{"n": "d1"}', group_key => 'd', delay => '1 hour') \gset
select id as d2 from brooq.enqueue('t.g', '{"n": "d2"}', group_key => 'd') \gset
select is_empty($$ select * from brooq.claim('w5', array['t.g'], 10, '1 hour') $$,
    'd2 is ready but waits for d1, which is not available for an hour');
select results_eq($$ select held_by_group from brooq.topic_stats where topic = 't.g' $$,
    $$ values (1::bigint) $$, 'topic_stats: d2 held by its group');
set local brooq.now = '2030-01-01 01:01:00+00';
select results_eq($$ select id from brooq.claim('w5', array['t.g'], 10, '1 hour') $$, array[:d1::bigint], 'then d1 first');

-- enqueue_many: groups in array order -----------------------------------------------------------

select lives_ok($$ select brooq.enqueue_many('t.g2', array['{"n": 1}', '{"n": 2}', '{"n": 3}', '{"n": 4}', '{"n": 5}']::jsonb[],
                                           group_keys => array['m', 'n', 'm', null, 'm']) $$, 'a batch of two groups and an ungrouped job');
select results_eq($$ select payload->>'n', group_seq from brooq.job where topic = 't.g2' and group_key = 'm' order by group_seq $$,
    $$ values ('1', 1::bigint), ('3', 2::bigint), ('5', 3::bigint) $$, 'the jobs of group m are numbered in array order');
select results_eq($$ select last_seq from brooq.job_group where topic = 't.g2' and group_key = 'm' $$,
    $$ values (3::bigint) $$, 'job_group keeps the last number');
select lives_ok($$ select brooq.enqueue_many('t.g2', array['{"n": 6}']::jsonb[], group_keys => array['m']) $$, 'one more for m');
select is((select group_seq from brooq.job where topic = 't.g2' and payload->>'n' = '6'), 4::bigint, 'numbered after the batch');
select set_eq($$ select payload->>'n' from brooq.claim('w6', array['t.g2'], 10, '1 hour') $$, array['1', '2', '4'],
    'a claim takes the first of m, the first of n and the ungrouped job');
select lives_ok($$ select brooq.settle_many('w6', array(select id from brooq.job where topic = 't.g2' and state = 'processing'),
                       array(select lease_token from brooq.job where topic = 't.g2' and state = 'processing'),
                       array(select 'done' from brooq.job where topic = 't.g2' and state = 'processing')) $$, 'they are done');
select results_eq($$ select payload->>'n' from brooq.claim('w6', array['t.g2'], 10, '1 hour') $$, array['3'], 'then the second of m');

-- with max_in_flight -----------------------------------------------------------------------------

select lives_ok($$ select brooq.declare_topic('t.gl', max_in_flight => 2) $$, 'a topic with max_in_flight 2');
select lives_ok($$ select brooq.enqueue_many('t.gl', array_fill('{}'::jsonb, array[4]), group_keys => array['x', 'x', 'y', 'z']) $$,
    'four jobs in three groups');
select is((select count(*)::int from brooq.claim('w7', array['t.gl'], 10, '1 hour')), 2, 'the limit (2) and the groups: 2 jobs');
select is((select count(distinct group_key)::int from brooq.job where topic = 't.gl' and state = 'processing'), 2,
    'of two groups');

-- a re-driven dead job goes to the end of its group -----------------------------------------------

select id as r1 from brooq.enqueue('t.g2', '{"n": "r1"}', group_key => 'r') \gset
select id as r2 from brooq.enqueue('t.g2', '{"n": "r2"}', group_key => 'r') \gset
select ok(brooq.cancel(:r1), 'r1 canceled');
select results_eq($$ select id from brooq.claim('w8', array['t.g2'], 10, '1 hour') where payload->>'n' like 'r%' $$,
    array[:r2::bigint], 'r2 runs');
select ok(brooq.retry(:r1), 'r1 re-driven while r2 runs');
select is((select group_seq from brooq.job where id = :r1), 3::bigint, 'it gets the next number of its group');
select is_empty($$ select * from brooq.claim('w8', array['t.g2'], 10, '1 hour') where payload->>'n' = 'r1' $$,
    'and waits for r2: never two of a group at once');

-- errors --------------------------------------------------------------------------------------------

select throws_ok($$ select brooq.enqueue('t.g', '{}', group_key => repeat('k', 256)) $$, '22023',
    'group_key "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk..." is 256 characters long', 'a group key over 255 characters is 22023');
select throws_ok($$ select brooq.enqueue_many('t.g', array['{}', '{}']::jsonb[], group_keys => array['a']) $$, '22023',
    'group_keys has 1 elements, payloads has 2', 'group_keys of another length is 22023');
select throws_ok($$ select brooq.enqueue_many('t.g', array['{}']::jsonb[], group_keys => array[repeat('k', 300)]) $$, '22023',
    'group key 1 ("kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk...") is 300 characters long', 'a group key element over 255 characters is 22023');
select throws_ok($$ select brooq.enqueue_many('t.g', array['{}']::jsonb[], group_keys => array[['a']]) $$, '22023',
    'brooq.enqueue_many: payloads, idempotency_keys and group_keys must be one-dimensional arrays',
    'a two-dimensional group_keys is 22023');

select * from finish();
rollback;
