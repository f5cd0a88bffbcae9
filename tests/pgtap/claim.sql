-- brooq.claim: structure, behaviour (order, readiness, bounds, what a claim
-- writes, paused and terminal jobs, several topics, errors), then privileges
-- under switched roles.
begin;
select plan(85);

-- Structure -------------------------------------------------------------------

select has_function('brooq', 'claim', array['text', 'text[]', 'integer', 'interval']);
select function_returns('brooq', 'claim', array['text', 'text[]', 'integer', 'interval'], 'setof brooq.claimed_job',
    'claim returns setof brooq.claimed_job');
select is_definer('brooq', 'claim', array['text', 'text[]', 'integer', 'interval']);

-- Behaviour: order ------------------------------------------------------------------

set local brooq.now = '2030-01-01 00:00:00+00';
select lives_ok($$ select brooq.declare_topic('t.claim', max_attempts => 3, backoff_base => '10 seconds') $$, 'declare the topic');
select lives_ok($$ select brooq.declare_topic('t.claim.x') $$, 'declare topic x');
select lives_ok($$ select brooq.declare_topic('t.claim.y') $$, 'declare topic y');
select lives_ok($$ select brooq.declare_topic('t.claim.idle') $$, 'declare a topic without jobs');

select id as a from brooq.enqueue('t.claim', '{"n": "a"}', priority => 0, available_at => '2029-12-31 23:50:00+00') \gset
select id as b from brooq.enqueue('t.claim', '{"n": "b"}', priority => 5, available_at => '2029-12-31 23:59:00+00') \gset
select id as c from brooq.enqueue('t.claim', '{"n": "c"}', priority => 5, available_at => '2029-12-31 23:55:00+00') \gset
select id as d from brooq.enqueue('t.claim', '{"n": "d"}', priority => 0, available_at => '2029-12-31 23:50:00+00') \gset
select id as e from brooq.enqueue('t.claim', '{"n": "e"}', priority => 10, available_at => '2030-01-01 00:01:00+00') \gset
select id as f from brooq.enqueue('t.claim', '{"n": "f"}', priority => -1) \gset
select ok(:a < :d, '(a was enqueued before d)');

select results_eq($$ select id from brooq.claim('w1', array['t.claim']) $$, array[:c::bigint],
    'the highest priority first, and of equal priorities the earliest available_at');
select results_eq($$ select id from brooq.claim('w1', array['t.claim']) $$, array[:b::bigint],
    'then the other job of priority 5');
select results_eq($$ select id from brooq.claim('w1', array['t.claim']) $$, array[:a::bigint],
    'of equal priority and available_at, the lower id first');
select results_eq($$ select id from brooq.claim('w1', array['t.claim']) $$, array[:d::bigint], 'then the higher id');
select results_eq($$ select id from brooq.claim('w1', array['t.claim']) $$, array[:f::bigint],
    'a job available exactly now is ready; a negative priority comes last');
select is_empty($$ select * from brooq.claim('w1', array['t.claim']) $$,
    'a job whose available_at is in the future is not claimed, whatever its priority');
select is((select state::text from brooq.job where id = :e), 'pending', 'the future job is still pending');
set local brooq.now = '2030-01-01 00:01:00+00';
select results_eq($$ select id from brooq.claim('w1', array['t.claim']) $$, array[:e::bigint],
    'once its available_at has come, it is claimed');
select is_empty($$ select * from brooq.claim('w2', array['t.claim'], max_jobs => 100) $$,
    'jobs in flight are never claimed again');

-- Behaviour: what a claim returns and writes ---------------------------------------------

set local brooq.now = '2030-01-01 01:00:00+00';
select id as g from brooq.enqueue('t.claim', '{"n": "g"}', priority => 2) \gset
create temp table g_claim on commit drop as
select id, topic, payload, attempt, max_attempts, priority, lease_token, locked_until, created_at
  from brooq.claim('w-g', array['t.claim'], lease => '45 seconds');
select lease_token as g_tok from g_claim \gset
select results_eq(
    $$ select id, topic, payload, attempt, max_attempts, priority, locked_until, created_at from g_claim $$,
    format($$ values (%s::bigint, 't.claim'::text, '{"n": "g"}'::jsonb, 1, 3, 2,
                      timestamptz '2030-01-01 01:00:45+00', timestamptz '2030-01-01 01:00:00+00') $$, :g),
    'claim returns the job with attempt 1 and locked_until = now + lease');
select results_eq(
    format($$ select state::text, attempts, lease_token, locked_by, locked_until, updated_at from brooq.job where id = %s $$, :g),
    format($$ values ('processing'::text, 1, %s::bigint, 'w-g'::text, timestamptz '2030-01-01 01:00:45+00',
               timestamptz '2030-01-01 01:00:00+00') $$, :g_tok),
    'the row is processing, attempts + 1, the claim''s lease_token, leased to the worker');

-- a failed job comes back after its backoff, with the next attempt and a new token
select is(brooq.settle(:g, 'w-g', :g_tok, 'delay', delay => '10 seconds'), 'failed', 'job g fails, to be retried in 10 s');
select is_empty($$ select * from brooq.claim('w1', array['t.claim']) $$, 'a failed job is not claimed before its available_at');
set local brooq.now = '2030-01-01 01:00:10+00';
select results_eq(format($$ select id, attempt, lease_token <> %s from brooq.claim('w1', array['t.claim']) $$, :g_tok),
    format($$ values (%s::bigint, 2, true) $$, :g),
    'a failed job is claimed again once ready: attempt 2, a new lease_token');

-- Behaviour: max_jobs -------------------------------------------------------------

set local brooq.now = '2030-01-01 02:00:00+00';
select lives_ok($$ select brooq.enqueue_many('t.claim', array['{}', '{}', '{}', '{}', '{}']::jsonb[]) $$, 'five ready jobs');
select results_eq($$ select count(*)::int from brooq.claim('w1', array['t.claim'], max_jobs => 2) $$, array[2],
    'max_jobs bounds a claim');
select results_eq($$ select count(*)::int from brooq.claim('w1', array['t.claim'], max_jobs => 10) $$, array[3],
    'a claim takes what is ready, up to max_jobs');
select is_empty($$ select * from brooq.claim('w1', array['t.claim'], max_jobs => 10000) $$, 'nothing is left');
select is_empty($$ select * from brooq.claim('w1', array['t.claim.idle']) $$, 'an idle topic gives zero rows');

-- Behaviour: several topics ----------------------------------------------------------

select id as x1 from brooq.enqueue('t.claim.x', '{}', priority => 1) \gset
select id as x2 from brooq.enqueue('t.claim.x', '{}', priority => 2) \gset
select id as y1 from brooq.enqueue('t.claim.y', '{}', priority => 3) \gset
select id as y2 from brooq.enqueue('t.claim.y', '{}', priority => 0) \gset
select set_eq($$ select id from brooq.claim('w1', array['t.claim.x', 't.claim.y'], max_jobs => 2) $$,
    array[:y1::bigint, :x2::bigint], 'across topics, the highest priorities first');
select set_eq($$ select id from brooq.claim('w1', array['t.claim.y', 't.claim.x', 't.claim.idle'], max_jobs => 5) $$,
    array[:x1::bigint, :y2::bigint], 'then the rest, whatever the order of the topics array');
select lives_ok($$ select brooq.enqueue_many('t.claim.x', array['{}', '{}', '{}']::jsonb[]) $$, 'three more jobs in x');
select results_eq($$ select count(distinct id)::int from brooq.claim('w1', array['t.claim.x', 't.claim.x'], max_jobs => 3) $$,
    array[3], 'a topic named twice still gives max_jobs distinct jobs');

-- Behaviour: several topics merged in rounds (a claim locks a little of each head) --

select lives_ok($$ select brooq.declare_topic(format('t.claim.m%s', g)) from generate_series(1, 20) g $$,
    'declare 20 topics');
select lives_ok($$ select brooq.enqueue_many(format('t.claim.m%s', g), array_fill('{}'::jsonb, array[30]))
                     from generate_series(1, 20) g $$,
    '30 jobs in each, topic after topic: the first topic holds the 30 oldest');
create temp table m_topics on commit drop as
select array_agg(format('t.claim.m%s', g) order by g) as names from generate_series(1, 20) g;
select set_eq($$ select id from brooq.claim('w-m', (select names from m_topics), max_jobs => 30) $$,
    $$ select id from brooq.job where topic = 't.claim.m1' $$,
    'a claim of 30 from 20 topics takes exactly the 30 oldest, all of one topic');
select cmp_ok((select count(*)::int from brooq.job
                where topic like 't.claim.m%' and state = 'pending' and xmax = xid(pg_current_xact_id())), '<', 4 * 30,
    'and locks fewer than 4 x 30 rows it does not take (30 of each head would be 570)');
select id as m_urgent from brooq.enqueue('t.claim.m20', '{}', priority => 5) \gset
select set_eq($$ select id from brooq.claim('w-m', (select names from m_topics), max_jobs => 31) $$,
    format($$ select %s::bigint union all (select id from brooq.job where topic = 't.claim.m2') $$, :m_urgent),
    'a newer job of higher priority in the last topic comes first, then the next 30 oldest');
select lives_ok($$ select brooq.declare_topic(format('t.claim.i%s', g)) from generate_series(1, 4) g $$,
    'declare 4 more topics');
create temp table i_jobs on commit drop as
select e.id from generate_series(1, 10) r cross join lateral generate_series(1, 4) t
 cross join lateral brooq.enqueue(format('t.claim.i%s', t), jsonb_build_object('r', r)) e;
select set_eq($$ select id from brooq.claim('w-i', array['t.claim.i1', 't.claim.i2', 't.claim.i3', 't.claim.i4'],
                                             max_jobs => 10) $$,
    $$ select id from i_jobs order by id limit 10 $$,
    'jobs that interleave over 4 topics: a claim of 10 takes the 10 oldest of all four');

-- Behaviour: paused topics and terminal jobs -----------------------------------------

select id as p1 from brooq.enqueue('t.claim.x', '{"paused": true}') \gset
select id as q1 from brooq.enqueue('t.claim.y', '{"running": true}') \gset
select ok(brooq.pause_topic('t.claim.x'), 'pause x');
select results_eq($$ select id from brooq.claim('w1', array['t.claim.x', 't.claim.y'], max_jobs => 10) $$,
    array[:q1::bigint], 'a paused topic is skipped, the others are claimed');
select is_empty($$ select * from brooq.claim('w1', array['t.claim.x']) $$, 'claiming only a paused topic gives zero rows');
select ok(brooq.resume_topic('t.claim.x'), 'resume x');
select results_eq($$ select id from brooq.claim('w1', array['t.claim.x']) $$, array[:p1::bigint], 'resumed, it is claimed');

select lives_ok($$ select brooq.declare_topic('t.claim.term', max_attempts => 1) $$, 'declare a topic with one attempt');
select id as tdone from brooq.enqueue('t.claim.term', '{}', priority => 3) \gset
select id as tdead from brooq.enqueue('t.claim.term', '{}', priority => 2) \gset
select id as tcan from brooq.enqueue('t.claim.term', '{}', priority => 1) \gset
select lease_token as tdone_token from brooq.claim('w1', array['t.claim.term']) \gset
select lease_token as tdead_token from brooq.claim('w1', array['t.claim.term']) \gset
select is(brooq.settle(:tdone, 'w1', :tdone_token, 'done'), 'done', 'one job done');
select is(brooq.settle(:tdead, 'w1', :tdead_token, 'failed', error => 'boom'), 'dead', 'one job dead');
select ok(brooq.cancel(:tcan), 'one job canceled');
set local brooq.now = '2031-01-01 00:00:00+00';
select is_empty($$ select * from brooq.claim('w1', array['t.claim.term'], max_jobs => 100) $$,
    'done, dead and canceled jobs are never claimed, however long after');

-- Behaviour: errors ------------------------------------------------------------------

select throws_ok($$ select brooq.claim('w1', array['t.nope']) $$, '42704', 'cannot claim from topic "t.nope": it does not exist',
    'an unknown topic is 42704');
select throws_ok($$ select brooq.claim('w1', array['t.claim', 't.nope']) $$, '42704', 'cannot claim from topic "t.nope": it does not exist',
    'an unknown topic among known ones is 42704');
select throws_ok($$ select brooq.claim(null, array['t.claim']) $$, '22004', 'brooq.claim: arguments must not be NULL',
    'a NULL worker is 22004');
select throws_ok($$ select brooq.claim('w1', null) $$, '22004', null, 'NULL topics is 22004');
select throws_ok($$ select brooq.claim('w1', array['t.claim'], max_jobs => null) $$, '22004', null, 'NULL max_jobs is 22004');
select throws_ok($$ select brooq.claim('w1', array['t.claim'], lease => null) $$, '22004', null, 'a NULL lease is 22004');
select throws_ok($$ select brooq.claim('', array['t.claim']) $$, '22023', 'invalid worker name ""', 'an empty worker is 22023');
select throws_ok(format($$ select brooq.claim(%L, array['t.claim']) $$, repeat('w', 201)), '22023',
    format('invalid worker name "%s"', repeat('w', 40)), 'a worker name over 200 characters is 22023');
select throws_ok($$ select brooq.claim('w1', array[]::text[]) $$, '22023',
    'brooq.claim: topics must be a one-dimensional, non-empty array without NULLs, not {}',
    'an empty topics array is 22023');
select throws_ok($$ select brooq.claim('w1', array[['t.claim', 't.claim']]) $$, '22023',
    'brooq.claim: topics must be a one-dimensional, non-empty array without NULLs, not {{t.claim,t.claim}}',
    'a two-dimensional topics array is 22023 (not 0A000)');
select throws_ok(format($$ select brooq.claim('w1', array[null, %L]) $$, repeat('x', 1000000)), '22023',
    format('brooq.claim: topics must be a one-dimensional, non-empty array without NULLs, not {NULL,%s', repeat('x', 94)),
    'a bad topics array is quoted cut short (100 characters)');
select throws_ok($$ select brooq.claim('w1', array['t.claim'], lease => '2 hours') $$, '22023',
    'lease 02:00:00 is longer than 01:00:00, the max_lease of the topics claimed from',
    'a lease above the topic''s max_lease (default 1 hour) is 22023');
select throws_ok($$ select brooq.claim('w1', array['t.claim'], lease => '200000 years') $$, '22023', null,
    'a lease of 200000 years is 22023');
select throws_ok($$ select brooq.claim('w1', array['t.claim'], lease => '-1 mon 31 days') $$, '22023',
    'invalid lease -1 mons +31 days', 'a mixed-sign lease (0 days at a month end) is 22023');
select throws_ok($$ select brooq.claim('w1', array['t.claim'], lease => '1 mon -29 days') $$, '22023',
    'invalid lease 1 mon -29 days', 'a mixed-sign lease (-1 day at the end of February) is 22023');
select throws_ok($$ select brooq.claim('w1', array['t.claim', null]) $$, '22023', null, 'a NULL topic is 22023');
select throws_ok($$ select brooq.claim('w1', array['t.claim'], max_jobs => 0) $$, '22023', 'invalid max_jobs 0',
    'max_jobs 0 is 22023');
select throws_ok($$ select brooq.claim('w1', array['t.claim'], max_jobs => 10001) $$, '22023', 'invalid max_jobs 10001',
    'max_jobs over 10000 is 22023');
select throws_ok($$ select brooq.claim('w1', array['t.claim'], lease => '0') $$, '22023', 'invalid lease 00:00:00',
    'a zero lease is 22023');
select throws_ok($$ select brooq.claim('w1', array['t.claim'], lease => '-5 seconds') $$, '22023', 'invalid lease -00:00:05',
    'a negative lease is 22023');

-- Behaviour: leases run on the wall clock, not on the transaction's start ------------

set local brooq.now = '';
select lives_ok($$ select brooq.declare_topic('t.claim.wall') $$, 'declare a topic (clock unfrozen)');
select lives_ok($$ select brooq.enqueue('t.claim.wall') $$, 'a job');
select lives_ok($$ select pg_sleep(0.2) $$, 'let 0.2 s pass inside this transaction');
select cmp_ok((select locked_until from brooq.claim('w-wall', array['t.claim.wall'], lease => '10 seconds')) - now(),
    '>=', interval '10.2 seconds',
    'locked_until = clock_timestamp() + lease: now() (frozen at the transaction start) would lose the time already spent');
set local brooq.now = '2031-01-01 00:00:00+00';

-- Behaviour: at most one job that lost its lease per claim (the poison pill's neighbours) --

select lives_ok($$ select brooq.declare_topic('t.claim.suspect') $$, 'declare a topic');
select lives_ok($$ select brooq.declare_topic('t.claim.suspect2') $$, 'and a second one');
create temp table suspects on commit drop as
select id from brooq.enqueue_many('t.claim.suspect', array_fill('{}'::jsonb, array[3]));
select lives_ok($$ select brooq.enqueue_many('t.claim.suspect', array_fill('{}'::jsonb, array[2])) $$, 'two fresh jobs');
select lives_ok($$ select brooq.enqueue_many('t.claim.suspect2', array_fill('{}'::jsonb, array[2])) $$,
    'two jobs of the second topic');
-- three jobs reaped once (as the neighbours of a poison pill are): by hand, as the owner
update brooq.job set lease_losses = 1 where id in (select id from suspects);
select is((select count(*)::int from brooq.claim('w-s1', array['t.claim.suspect'], max_jobs => 10)
            where id in (select id from suspects)), 1,
    'a claim of 10 takes one of the three jobs that lost their lease (and the two fresh ones)');
select is((select count(*)::int from brooq.job where topic = 't.claim.suspect' and state = 'processing'), 3,
    '1 + 2 claimed');
update brooq.job set lease_losses = 1 where topic = 't.claim.suspect2';
select is((select count(*)::int from brooq.claim('w-s2', array['t.claim.suspect', 't.claim.suspect2'], max_jobs => 10)), 1,
    'with several topics: one per call, not one per topic');
select is((select count(*)::int from brooq.claim('w-s3', array['t.claim.suspect', 't.claim.suspect2'], max_jobs => 10)), 1,
    'the next claim takes one more');
select is((select count(*)::int from brooq.claim('w-s4', array['t.claim.suspect', 't.claim.suspect2'], max_jobs => 10)), 1,
    'and the next the last: none is left behind');

-- Privileges ---------------------------------------------------------------------

select lives_ok($$ select brooq.enqueue_many('t.claim', array['{}', '{}']::jsonb[]) $$, 'two more jobs');
set local role brooq_producer;
select throws_ok($$ select brooq.claim('w1', array['t.claim']) $$, '42501', 'permission denied for function claim',
    'brooq_producer cannot claim');
reset role;
set local role brooq_worker;
select results_eq($$ select count(*)::int from brooq.claim('w-worker', array['t.claim']) $$, array[1], 'brooq_worker can claim');
reset role;
set local role brooq_admin;
select results_eq($$ select count(*)::int from brooq.claim('w-admin', array['t.claim']) $$, array[1],
    'brooq_admin can claim (member of brooq_worker)');
reset role;

select * from finish();
rollback;
