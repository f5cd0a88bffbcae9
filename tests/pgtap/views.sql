-- The views brooq.topic_stats and brooq.in_flight: structure, behaviour (the
-- counts per state and readiness, the oldest ready age and the leases in flight,
-- under a frozen clock), then privileges under switched roles.
begin;
select plan(24);

-- Structure -------------------------------------------------------------------

select has_view('brooq', 'topic_stats', 'the view brooq.topic_stats exists');
select columns_are('brooq', 'topic_stats',
    array['topic', 'paused', 'pending', 'failed', 'ready', 'scheduled', 'processing', 'expired', 'oldest_ready_age',
          'max_in_flight', 'rate', 'per', 'held_by_in_flight', 'held_by_rate', 'max_execution', 'held_by_group',
          'waiting']);
select has_view('brooq', 'in_flight', 'the view brooq.in_flight exists');
select columns_are('brooq', 'in_flight',
    array['id', 'topic', 'attempts', 'max_attempts', 'locked_by', 'locked_until', 'claimed_at', 'running_for', 'expired', 'progress']);
select col_type_is('brooq', 'topic_stats', 'oldest_ready_age', 'interval', 'oldest_ready_age is an interval');

-- Behaviour -----------------------------------------------------------------------

set local brooq.now = '2030-01-01 00:50:00+00';
select lives_ok($$ select brooq.declare_topic('t.views', backoff_max => '1 day') $$, 'declare the topic');
select lives_ok($$ select brooq.declare_topic('t.views.idle') $$, 'declare an idle topic');

-- two failed jobs: one ready again, one waiting two hours
select id as fa from brooq.enqueue('t.views', '{"n": "fa"}', priority => 10) \gset
select id as fb from brooq.enqueue('t.views', '{"n": "fb"}', priority => 9) \gset
select lease_token as fa_tok from brooq.claim('w0', array['t.views']) \gset
select lease_token as fb_tok from brooq.claim('w0', array['t.views']) \gset
select results_eq(
    format($$ select brooq.settle(%s, 'w0', %s, 'delay', delay => '0')::text
              union all select brooq.settle(%s, 'w0', %s, 'delay', delay => '2 hours')::text $$, :fa, :fa_tok, :fb, :fb_tok),
    $$ values ('failed'::text), ('failed') $$, 'two jobs fail: one retries now, one in two hours');
-- one job in flight whose 5-minute lease will have expired
select id as exp from brooq.enqueue('t.views', '{"n": "expired"}', priority => 20) \gset
select lease_token as exp_tok from brooq.claim('w-exp', array['t.views'], lease => '5 minutes') \gset

set local brooq.now = '2030-01-01 00:59:00+00';
-- one job in flight with a live lease
select id as live from brooq.enqueue('t.views', '{"n": "live"}', priority => 20) \gset
select lease_token as live_tok from brooq.claim('w-live', array['t.views'], lease => '1 hour') \gset
-- three pending jobs: two ready (since 00:40 and 00:59), one scheduled; and two terminal ones
select lives_ok($$ select brooq.enqueue('t.views', '{"n": "p1"}', available_at => '2030-01-01 00:40:00+00'),
                          brooq.enqueue('t.views', '{"n": "p2"}'),
                          brooq.enqueue('t.views', '{"n": "p3"}', available_at => '2030-01-01 02:00:00+00') $$,
    'three pending jobs');
select id as can from brooq.enqueue('t.views', '{"n": "canceled"}', available_at => '2030-01-01 00:00:00+00') \gset
select ok(brooq.cancel(:can), 'a canceled job (not counted)');

set local brooq.now = '2030-01-01 01:00:00+00';
select results_eq(
    $$ select paused, pending, failed, ready, scheduled, processing, expired, oldest_ready_age
         from brooq.topic_stats where topic = 't.views' $$,
    $$ values (false, 3::bigint, 2::bigint, 3::bigint, 2::bigint, 2::bigint, 1::bigint, interval '20 minutes') $$,
    'topic_stats: 3 pending and 2 failed, of which 3 ready and 2 scheduled; 2 in flight, 1 expired; oldest ready for 20 min');
select results_eq(
    $$ select paused, pending, failed, ready, scheduled, processing, expired, oldest_ready_age
         from brooq.topic_stats where topic = 't.views.idle' $$,
    $$ values (false, 0::bigint, 0::bigint, 0::bigint, 0::bigint, 0::bigint, 0::bigint, null::interval) $$,
    'a topic without jobs has a row of zeros and no oldest ready age');
select results_eq(
    $$ select id, topic, attempts, max_attempts, locked_by, locked_until, claimed_at, running_for, expired
         from brooq.in_flight where topic = 't.views' order by locked_until $$,
    format($$ values (%s::bigint, 't.views'::text, 1, 5, 'w-exp'::text, timestamptz '2030-01-01 00:55:00+00',
                      timestamptz '2030-01-01 00:50:00+00', interval '10 minutes', true),
                     (%s, 't.views', 1, 5, 'w-live', timestamptz '2030-01-01 01:59:00+00',
                      timestamptz '2030-01-01 00:59:00+00', interval '1 minute', false) $$, :exp, :live),
    'in_flight: each job in flight, who holds it, since when, until when, and whether the lease expired');
select ok(brooq.pause_topic('t.views'), 'pause the topic');
select is((select paused from brooq.topic_stats where topic = 't.views'), true, 'topic_stats shows the pause');

set local brooq.now = '2030-01-01 03:00:00+00';
select results_eq(
    $$ select ready, scheduled, expired, oldest_ready_age from brooq.topic_stats where topic = 't.views' $$,
    $$ values (5::bigint, 0::bigint, 2::bigint, interval '2 hours 20 minutes') $$,
    'as the clock moves, scheduled jobs become ready and leases expire');

-- Privileges ---------------------------------------------------------------------------

set local role brooq_worker;
select results_eq($$ select pending from brooq.topic_stats where topic = 't.views' $$, array[3::bigint],
    'brooq_worker can read topic_stats');
select results_eq($$ select count(*)::int from brooq.in_flight where topic = 't.views' $$, array[2],
    'brooq_worker can read in_flight');
reset role;
set local role brooq_producer;
select throws_ok($$ select * from brooq.topic_stats $$, '42501', 'permission denied for view topic_stats',
    'brooq_producer cannot read topic_stats');
select throws_ok($$ select * from brooq.in_flight $$, '42501', 'permission denied for view in_flight',
    'brooq_producer cannot read in_flight');
reset role;
set local role brooq_admin;
select results_eq($$ select count(*)::int from brooq.topic_stats where topic like 't.views%' $$, array[2],
    'brooq_admin can read topic_stats');
reset role;

-- brooq.jobs: a job's fate is one SELECT, for every role, read-only.
select id as fate_id from brooq.jobs where topic = 't.views' and state = 'processing' order by id limit 1 \gset
set local role brooq_producer;
select results_eq(format($$ select state::text, attempts from brooq.jobs where id = %s $$, :fate_id),
    $$ values ('processing', 1) $$, 'brooq_producer reads a job''s fate from brooq.jobs');
select throws_ok(format($$ update brooq.jobs set state = 'done' where id = %s $$, :fate_id), '42501', null,
    'but cannot write through it');
reset role;
select is((select count(*)::int from brooq.jobs), (select count(*)::int from brooq.job), 'brooq.jobs shows every job');

select * from finish();
rollback;
