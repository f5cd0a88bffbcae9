-- brooq._backoff, brooq._now and brooq._available_at, the private helpers:
-- structure, behaviour (backoff bounds, jitter, no overflow for huge attempt
-- numbers; the freezable clock; when a new job becomes ready), then privileges.
begin;
select plan(33);

-- Structure -------------------------------------------------------------------

select has_function('brooq', '_backoff', array['interval', 'interval', 'integer']);
select function_returns('brooq', '_backoff', array['interval', 'interval', 'integer'], 'interval');
select isnt_definer('brooq', '_backoff', array['interval', 'interval', 'integer']);
select has_function('brooq', '_now', array[]::text[]);
select function_returns('brooq', '_now', array[]::text[], 'timestamp with time zone');
select volatility_is('brooq', '_now', array[]::text[], 'volatile', '_now is volatile (the wall clock moves within a statement)');
select has_function('brooq', '_available_at', array['timestamp with time zone', 'timestamp with time zone', 'interval']);

-- Behaviour: backoff ------------------------------------------------------------------

-- d = min(base * 2^(attempt-1), cap); the delay is uniform in [d/2, d]
create temp table draws on commit drop as
select a.attempt, brooq._backoff('1 second', '1 minute', a.attempt) as delay
  from (values (1), (2), (3), (6), (7), (31), (32), (64), (65), (1000), (2147483647)) as a(attempt),
       generate_series(1, 200);
select results_eq(
    $$ select attempt, bool_and(delay between lo and hi) from draws
         join (values (1, interval '0.5 seconds', interval '1 second'),
                      (2, '1 second', '2 seconds'),
                      (3, '2 seconds', '4 seconds'),
                      (6, '16 seconds', '32 seconds'),
                      (7, '30 seconds', '1 minute'),
                      (31, '30 seconds', '1 minute'),
                      (32, '30 seconds', '1 minute'),
                      (64, '30 seconds', '1 minute'),
                      (65, '30 seconds', '1 minute'),
                      (1000, '30 seconds', '1 minute'),
                      (2147483647, '30 seconds', '1 minute')) as b(attempt, lo, hi) using (attempt)
        group by attempt order by attempt $$,
    $$ values (1, true), (2, true), (3, true), (6, true), (7, true), (31, true), (32, true), (64, true), (65, true),
              (1000, true), (2147483647, true) $$,
    'every draw is in [d/2, d] with d = min(base * 2^(attempt-1), cap), up to attempt 2147483647');
select results_eq(
    $$ select bool_and(lo < interval '0.6 seconds' and hi > interval '0.9 seconds')
         from (select min(delay) lo, max(delay) hi from draws where attempt = 1) s $$,
    array[true], 'the delay is spread over [d/2, d] (jitter), not a constant');
select results_eq(
    $$ select bool_and(lo < interval '36 seconds' and hi > interval '54 seconds')
         from (select min(delay) lo, max(delay) hi from draws where attempt = 2147483647) s $$,
    array[true], 'the capped delay is spread over [cap/2, cap] too');
select lives_ok($$ select brooq._backoff('1 day', '365 days', 2147483647) $$, 'a huge base and cap at a huge attempt do not overflow');
select cmp_ok(brooq._backoff('1 day', '365 days', 2147483647), '<=', interval '365 days', 'and stay under the cap');
select cmp_ok(brooq._backoff('1 microsecond', '1 microsecond', 2147483647), '<=', interval '1 microsecond',
    'the smallest base and cap stay under the cap');
select cmp_ok(brooq._backoff('10 seconds', '10 seconds', 1), '>=', interval '5 seconds', 'base = cap: at least cap/2');
select results_eq($$ select bool_and(brooq._backoff('1 second', '1 minute', a) between interval '0.5 seconds' and interval '1 second')
                       from generate_series(-5, 0) a $$,
    array[true], 'an attempt of 0 or below counts as the first (no negative exponent)');

-- through settle: the stored retry instant obeys the same bound at a huge attempt number
set local brooq.now = '2030-01-01 00:00:00+00';
select lives_ok($$ select brooq.declare_topic('t.backoff', max_attempts => 1000, backoff_base => '1 second', backoff_max => '1 hour') $$,
    'declare a topic');
select id as j from brooq.enqueue('t.backoff') \gset
update brooq.job set attempts = 999 where id = :j;  -- as the owner: the job has failed 999 times
select attempt, lease_token from brooq.claim('w1', array['t.backoff']) \gset
select is(:attempt, 1000, 'the job is on attempt 1000');
select is(brooq.settle(:j, 'w1', :lease_token, 'preserve'), 'failed', 'preserve on attempt 1000 keeps it alive');
update brooq.job set attempts = 998 where id = :j;
set local brooq.now = '2030-01-01 00:00:01+00';
select attempt, lease_token from brooq.claim('w1', array['t.backoff']) \gset
select is(brooq.settle(:j, 'w1', :lease_token, 'failed'), 'failed', 'failed on attempt 999 of 1000');
select ok((select available_at between timestamptz '2030-01-01 00:30:01+00' and timestamptz '2030-01-01 01:00:01+00'
             from brooq.job where id = :j),
    'attempt 999 retries within [backoff_max/2, backoff_max], no overflow');

-- Behaviour: the clock -------------------------------------------------------------------

set local brooq.now = '2030-01-01 00:00:00+00';
select is(brooq._now(), timestamptz '2030-01-01 00:00:00+00', 'the setting brooq.now freezes the clock');
set local brooq.now = '2030-06-15 12:34:56.789+02';
select is(brooq._now(), timestamptz '2030-06-15 10:34:56.789+00', 'and moves it');
set local brooq.now = '';
select cmp_ok(brooq._now(), '>=', now(), 'an empty setting means the wall clock, not before the transaction started');
select ok(brooq._now() between clock_timestamp() - interval '1 second' and clock_timestamp(),
    'the wall clock is clock_timestamp() (not the frozen transaction start)');
select isnt(brooq._now(), now(), 'within a transaction, the clock still moves');
-- A session that is not a superuser's may not move brooq's clock (it could reap live leases).
set local session authorization brooq_worker;
set local brooq.now = '2099-01-01 00:00:00+00';
select throws_ok($$ select * from brooq.reap() $$, '42501',
    'brooq.now is set to "2099-01-01 00:00:00+00", but only a superuser may freeze brooq''s clock',
    'a non-superuser session that sets brooq.now gets 42501, not a moved clock');
reset session authorization;
set local brooq.now = '';

-- Behaviour: when a new job becomes ready ----------------------------------------------------

select is(brooq._available_at('2030-01-01 00:00:00+00', null, null), timestamptz '2030-01-01 00:00:00+00', 'neither: now');
select is(brooq._available_at('2030-01-01 00:00:00+00', '2031-01-01 00:00:00+00', null), timestamptz '2031-01-01 00:00:00+00',
    'available_at as given');
select is(brooq._available_at('2030-01-01 00:00:00+00', null, '90 seconds'), timestamptz '2030-01-01 00:01:30+00', 'now + delay');
select throws_ok($$ select brooq._available_at(now(), now(), '1 second') $$, '22023', null, 'both: 22023');

-- Privileges ------------------------------------------------------------------------------------

set local role brooq_worker;
select throws_ok($$ select brooq._backoff('1 second', '1 minute', 1) $$, '42501', 'permission denied for function _backoff',
    'brooq_worker cannot call the private _backoff');
select throws_ok($$ select brooq._available_at(now(), null, null) $$, '42501', 'permission denied for function _available_at',
    'brooq_worker cannot call the private _available_at');
reset role;
set local role brooq_producer;
select throws_ok($$ select brooq._now() $$, '42501', 'permission denied for function _now',
    'brooq_producer cannot call _now (only the roles that read the views can)');
reset role;

select * from finish();
rollback;
