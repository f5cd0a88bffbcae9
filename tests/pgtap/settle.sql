-- brooq.settle: structure, behaviour (every outcome, backoff, dead, delay clamp,
-- the outcome dead,
-- preserve, fencing by worker and lease_token, repeats, terminal states, errors
-- with nothing written), then privileges under switched roles.
begin;
select plan(84);

-- Structure -------------------------------------------------------------------

select has_function('brooq', 'settle', array['bigint', 'text', 'bigint', 'text', 'text', 'interval', 'jsonb']);
select function_returns('brooq', 'settle', array['bigint', 'text', 'bigint', 'text', 'text', 'interval', 'jsonb'],
    'brooq.job_state', 'settle returns the new state');
select is_definer('brooq', 'settle', array['bigint', 'text', 'bigint', 'text', 'text', 'interval', 'jsonb']);

set local brooq.now = '2030-01-01 00:00:00+00';
select lives_ok($$ select brooq.declare_topic('t.settle', max_attempts => 2, backoff_base => '10 seconds',
                                               backoff_max => '1 minute') $$, 'declare a topic with 2 attempts');
select lives_ok($$ select brooq.declare_topic('t.settle.bo', max_attempts => 10, backoff_base => '10 seconds',
                                               backoff_max => '1 minute') $$, 'declare a topic with 10 attempts');
select lives_ok($$ select brooq.declare_topic('t.settle.one', max_attempts => 1, backoff_base => '10 seconds',
                                               backoff_max => '1 minute') $$, 'declare a topic with 1 attempt');

-- done ---------------------------------------------------------------------------

select id as d1 from brooq.enqueue('t.settle', '{"n": "done"}') \gset
select lease_token as d1_tok from brooq.claim('w1', array['t.settle']) \gset
set local brooq.now = '2030-01-01 00:00:03+00';
select is(brooq.settle(:d1, 'w1', :d1_tok, 'done', result => '{"answer": 42}'), 'done', 'done returns done');
select results_eq(
    format($$ select state::text, attempts, result, last_error, locked_by, locked_until, updated_at, available_at
                from brooq.job where id = %s $$, :d1),
    $$ values ('done'::text, 1, '{"answer": 42}'::jsonb, null::text, null::text, null::timestamptz,
               timestamptz '2030-01-01 00:00:03+00', timestamptz '2030-01-01 00:00:00+00') $$,
    'done: result stored, attempts kept, lease cleared, updated_at = now');
select is(brooq.settle(:d1, 'w1', :d1_tok, 'done', result => '{"answer": 0}'), null,
    'a repeat of the same settle returns NULL');
select is((select result from brooq.job where id = :d1), '{"answer": 42}'::jsonb, 'and changes nothing');
select is(brooq.settle(:d1, 'w1', :d1_tok, 'cancel'), null, 'another outcome on a done job returns NULL');
select is((select state::text from brooq.job where id = :d1), 'done', 'a terminal state is never overwritten');

-- failed: backoff within [d/2, d], d = min(base * 2^(attempt-1), backoff_max) -------

set local brooq.now = '2030-01-01 01:00:00+00';
select lives_ok($$ select brooq.enqueue_many('t.settle.bo', array_fill('{}'::jsonb, array[40])) $$, '40 jobs');
create temp table bo on commit drop as select * from brooq.claim('w1', array['t.settle.bo'], max_jobs => 40);
select is((select count(*)::int from bo where brooq.settle(id, 'w1', lease_token, 'failed', error => 'boom 1') = 'failed'), 40,
    'failed on attempt 1 of 10 returns failed');
select results_eq(
    $$ select count(*)::int, bool_and(j.state = 'failed' and j.attempts = 1 and j.last_error = 'boom 1'
                                     and j.locked_by is null and j.locked_until is null)
         from bo join brooq.job j using (id) $$,
    $$ values (40, true) $$, 'failed: state failed, attempts kept, last_error stored, lease cleared');
select results_eq(
    $$ select bool_and(available_at between timestamptz '2030-01-01 01:00:05+00' and timestamptz '2030-01-01 01:00:10+00')
         from brooq.job where id in (select id from bo) $$,
    array[true], 'attempt 1: every retry is in [base/2, base] = [5 s, 10 s]');
select results_eq(
    $$ select min(available_at) < timestamptz '2030-01-01 01:00:07+00' and max(available_at) > timestamptz '2030-01-01 01:00:08+00'
         from brooq.job where id in (select id from bo) $$,
    array[true], 'attempt 1: the retries are spread (jitter), not all at one instant');

set local brooq.now = '2030-01-01 01:00:10+00';
truncate bo;
insert into bo select * from brooq.claim('w1', array['t.settle.bo'], max_jobs => 40);
select is((select count(*)::int from bo where attempt = 2 and brooq.settle(id, 'w1', lease_token, 'failed') = 'failed'), 40,
    'failed on attempt 2 returns failed');
select results_eq(
    $$ select bool_and(available_at between timestamptz '2030-01-01 01:00:20+00' and timestamptz '2030-01-01 01:00:30+00'),
              min(available_at) < timestamptz '2030-01-01 01:00:24+00'
         from brooq.job where id in (select id from bo) $$,
    $$ values (true, true) $$, 'attempt 2: every retry is in [10 s, 20 s], spread');
select is((select count(*)::int from brooq.job where id in (select id from bo) and last_error = 'boom 1'), 40,
    'a failure without an error text keeps the previous last_error');

set local brooq.now = '2030-01-01 01:00:30+00';
truncate bo;
insert into bo select * from brooq.claim('w1', array['t.settle.bo'], max_jobs => 40);
select is((select count(*)::int from bo where attempt = 3 and brooq.settle(id, 'w1', lease_token, 'failed') = 'failed'), 40,
    'failed on attempt 3 returns failed');
select results_eq(
    $$ select bool_and(available_at between timestamptz '2030-01-01 01:00:50+00' and timestamptz '2030-01-01 01:01:10+00')
         from brooq.job where id in (select id from bo) $$,
    array[true], 'attempt 3: every retry is in [20 s, 40 s]');

set local brooq.now = '2030-01-01 01:01:10+00';
truncate bo;
insert into bo select * from brooq.claim('w1', array['t.settle.bo'], max_jobs => 40);
select is((select count(*)::int from bo where attempt = 4 and brooq.settle(id, 'w1', lease_token, 'failed') = 'failed'), 40,
    'failed on attempt 4 returns failed');
select results_eq(
    $$ select bool_and(available_at between timestamptz '2030-01-01 01:01:40+00' and timestamptz '2030-01-01 01:02:10+00'),
              max(available_at) > timestamptz '2030-01-01 01:02:00+00'
         from brooq.job where id in (select id from bo) $$,
    $$ values (true, true) $$, 'attempt 4: 80 s is capped at backoff_max, every retry in [30 s, 60 s]');

-- dead on the last attempt ----------------------------------------------------------

set local brooq.now = '2030-01-01 02:00:00+00';
select id as x1 from brooq.enqueue('t.settle', '{"n": "dies"}') \gset
select lease_token as x1_tok from brooq.claim('w1', array['t.settle']) \gset
select is(brooq.settle(:x1, 'w1', :x1_tok, 'failed', error => 'first'), 'failed', 'attempt 1 of 2 fails: failed');
set local brooq.now = '2030-01-01 02:01:00+00';
select lease_token as x1_tok from brooq.claim('w1', array['t.settle']) \gset
select is(brooq.settle(:x1, 'w1', :x1_tok, 'failed', error => 'second'), 'dead', 'attempt 2 of 2 fails: dead');
select results_eq(
    format($$ select state::text, attempts, last_error, locked_by from brooq.job where id = %s $$, :x1),
    $$ values ('dead'::text, 2, 'second'::text, null::text) $$, 'dead: attempts 2, the last error, no lease');
set local brooq.now = '2030-02-01 00:00:00+00';
select is_empty($$ select * from brooq.claim('w1', array['t.settle'], max_jobs => 100) $$, 'a dead job is never claimed again');

-- delay ------------------------------------------------------------------------------

set local brooq.now = '2030-01-01 03:00:00+00';
select id as y1 from brooq.enqueue('t.settle', '{"n": "delay"}') \gset
select lease_token as y1_tok from brooq.claim('w1', array['t.settle']) \gset
select is(brooq.settle(:y1, 'w1', :y1_tok, 'delay', delay => '5 seconds', error => 'busy', result => '{"partial": true}'),
    'failed', 'delay returns failed');
select results_eq(
    format($$ select state::text, attempts, available_at, last_error, result from brooq.job where id = %s $$, :y1),
    $$ values ('failed'::text, 1, timestamptz '2030-01-01 03:00:05+00', 'busy'::text, null::jsonb) $$,
    'delay: retried exactly after the delay, no jitter, attempt kept; a result is stored only for done');
set local brooq.now = '2030-01-01 03:00:05+00';
select lease_token as y1_tok from brooq.claim('w1', array['t.settle']) \gset
select is(brooq.settle(:y1, 'w1', :y1_tok, 'delay', delay => '1 second'), 'dead', 'delay on the last attempt: dead all the same');

select id as y2 from brooq.enqueue('t.settle.bo', '{"n": "long delay"}', priority => 100) \gset
select lease_token as y2_tok from brooq.claim('w1', array['t.settle.bo']) where id = :y2 \gset
select is(brooq.settle(:y2, 'w1', :y2_tok, 'delay', delay => '1 hour'), 'failed', 'a long delay returns failed');
select is((select available_at from brooq.job where id = :y2), timestamptz '2030-01-01 03:01:05+00',
    'a delay longer than backoff_max is clamped to backoff_max (1 minute)');
select id as y3 from brooq.enqueue('t.settle.bo', '{"n": "zero delay"}', priority => 101) \gset
select lease_token as y3_tok from brooq.claim('w1', array['t.settle.bo']) where id = :y3 \gset
select is(brooq.settle(:y3, 'w1', :y3_tok, 'delay', delay => '0'), 'failed', 'a zero delay returns failed');
select is((select available_at from brooq.job where id = :y3), timestamptz '2030-01-01 03:00:05+00', 'a zero delay is now');

select lives_ok($$ select brooq.declare_topic('t.settle.far', backoff_base => '1 day', backoff_max => '100 years') $$,
    'declare a topic with the longest backoff_max');
select id as y4 from brooq.enqueue('t.settle.far', '{"n": "far"}') \gset
select lease_token as y4_tok from brooq.claim('w1', array['t.settle.far']) \gset
select is(brooq.settle(:y4, 'w1', :y4_tok, 'delay', delay => '1000 years'), 'failed',
    'a delay of 1000 years is clamped to 100 years, no overflow');
select is((select available_at from brooq.job where id = :y4), timestamptz '2130-01-01 03:00:05+00',
    'retried 100 years on');

-- preserve -------------------------------------------------------------------------

set local brooq.now = '2030-01-01 04:00:00+00';
select id as p1 from brooq.enqueue('t.settle.one', '{"n": "preserve"}') \gset
select lease_token as p1_tok from brooq.claim('w1', array['t.settle.one']) \gset
select is(brooq.settle(:p1, 'w1', :p1_tok, 'preserve', error => 'not now'), 'failed',
    'preserve on the last (only) attempt returns failed, not dead');
select results_eq(
    format($$ select state::text, attempts, available_at, last_error, locked_by from brooq.job where id = %s $$, :p1),
    $$ values ('failed'::text, 0, timestamptz '2030-01-01 04:00:10+00', 'not now'::text, null::text) $$,
    'preserve: the attempt is given back, retried after backoff_base');
set local brooq.now = '2030-01-01 04:00:10+00';
select results_eq($$ select attempt from brooq.claim('w1', array['t.settle.one']) $$, array[1],
    'the next claim is attempt 1 again');
select lease_token as p1_tok from brooq.job where id = :p1 \gset
select is(brooq.settle(:p1, 'w1', :p1_tok, 'preserve', delay => '20 seconds'), 'failed', 'preserve again, with a delay');
select is((select available_at from brooq.job where id = :p1), timestamptz '2030-01-01 04:00:30+00', 'preserve honours its delay');
set local brooq.now = '2030-01-01 04:00:30+00';
select lease_token as p1_tok from brooq.claim('w1', array['t.settle.one']) \gset
select is(brooq.settle(:p1, 'w1', :p1_tok, 'preserve', delay => '1 day'), 'failed', 'preserve with a long delay');
select results_eq(format($$ select attempts, available_at from brooq.job where id = %s $$, :p1),
    $$ values (0, timestamptz '2030-01-01 04:01:30+00') $$,
    'preserve clamps its delay to backoff_max and never charges the attempt');

-- cancel ---------------------------------------------------------------------------

select id as c1 from brooq.enqueue('t.settle', '{"n": "cancel"}') \gset
select lease_token as c1_tok from brooq.claim('w1', array['t.settle']) where id = :c1 \gset
select is(brooq.settle(:c1, 'w1', :c1_tok, 'cancel', error => 'not wanted'), 'canceled', 'cancel returns canceled');
select results_eq(format($$ select state::text, attempts, last_error, locked_by, locked_until from brooq.job where id = %s $$, :c1),
    $$ values ('canceled'::text, 1, 'not wanted'::text, null::text, null::timestamptz) $$, 'cancel: canceled, lease cleared');

-- done after a failure keeps the failure on record, and long errors are cut
set local brooq.now = '2030-01-01 05:00:00+00';
select id as r1 from brooq.enqueue('t.settle', '{"n": "recovers"}') \gset
select lease_token as r1_tok from brooq.claim('w1', array['t.settle']) \gset
select is(brooq.settle(:r1, 'w1', :r1_tok, 'failed', error => repeat('e', 5000)), 'failed', 'a failure with a 5000-char error');
select is((select length(last_error) from brooq.job where id = :r1), 2000, 'last_error is cut to 2000 characters');
set local brooq.now = '2030-01-01 05:01:00+00';
select lease_token as r1_tok from brooq.claim('w1', array['t.settle']) \gset
select is(brooq.settle(:r1, 'w1', :r1_tok, 'done'), 'done',
    'a success on the last attempt is done (done is unconditional)');
select results_eq(format($$ select state::text, attempts, length(last_error), result from brooq.job where id = %s $$, :r1),
    $$ values ('done'::text, 2, 2000, null::jsonb) $$, 'done keeps the earlier last_error; no result given is NULL');

-- Fencing ------------------------------------------------------------------------------

set local brooq.now = '2030-01-01 06:00:00+00';
select id as f1 from brooq.enqueue('t.settle', '{"n": "fenced"}') \gset
select lease_token as f1_tok from brooq.claim('w1', array['t.settle'], lease => '30 seconds') \gset
select is(brooq.settle(:f1, 'w2', :f1_tok, 'done'), null, 'another worker''s settle returns NULL');
select is(brooq.settle(:f1, 'w1', :f1_tok # 1, 'done'), null, 'a lease_token that is not the claim''s returns NULL');
select results_eq(format($$ select state::text, locked_by, lease_token, result from brooq.job where id = %s $$, :f1),
    format($$ values ('processing'::text, 'w1'::text, %s::bigint, null::jsonb) $$, :f1_tok),
    'and nothing is written');
-- the lease expires, the job is reaped and claimed again by the same worker
set local brooq.now = '2030-01-01 06:00:31+00';
select is((select count(*)::int from brooq.reap() where id = :f1), 1, 'the expired lease is reaped');
select is(brooq.settle(:f1, 'w1', :f1_tok, 'done'), null, 'after a reap, the old claim''s settle returns NULL');
select is((select state::text from brooq.job where id = :f1), 'pending', 'and the reaped job stays pending');
select lease_token as f1_tok2 from brooq.claim('w1', array['t.settle']) \gset
select isnt(:f1_tok2::bigint, :f1_tok::bigint, 'the new claim has a new lease_token');
select is(brooq.settle(:f1, 'w1', :f1_tok, 'done', result => '{"stale": true}'), null,
    'a stale lease_token returns NULL even though the same worker holds the job again');
select results_eq(format($$ select state::text, locked_by, lease_token, result, attempts from brooq.job where id = %s $$, :f1),
    format($$ values ('processing'::text, 'w1'::text, %s::bigint, null::jsonb, 2) $$, :f1_tok2),
    'the stale settle wrote nothing: the new claim is intact');
select is(brooq.settle(:f1, 'w1', :f1_tok2, 'failed', error => 'x'), 'dead', 'the current claim settles');
set local brooq.now = '2030-01-01 06:05:00+00';
select is(brooq.settle(:f1, 'w1', :f1_tok2, 'failed', error => 'x'), null, 'a repeat of a failed settle returns NULL');
select results_eq(format($$ select state::text, updated_at from brooq.job where id = %s $$, :f1),
    $$ values ('dead'::text, timestamptz '2030-01-01 06:00:31+00') $$, 'and leaves the row as it was');

select id as f2 from brooq.enqueue('t.settle.bo', '{"n": "repeat failed"}', priority => 102) \gset
select lease_token as f2_tok from brooq.claim('w1', array['t.settle.bo']) where id = :f2 \gset
select is(brooq.settle(:f2, 'w1', :f2_tok, 'failed', error => 'once'), 'failed', 'a job fails');
select available_at as f2_at from brooq.job where id = :f2 \gset
set local brooq.now = '2030-01-01 06:05:01+00';
select is(brooq.settle(:f2, 'w1', :f2_tok, 'failed', error => 'twice'), null, 'the same failed settle again returns NULL');
select results_eq(format($$ select state::text, attempts, last_error, available_at, updated_at from brooq.job where id = %s $$, :f2),
    format($$ values ('failed'::text, 1, 'once'::text, %L::timestamptz, timestamptz '2030-01-01 06:05:00+00') $$, :'f2_at'),
    'a repeated failed settle changes neither the error, nor the retry time, nor the attempts');

-- dead: at once, through settle_many --------------------------------------------------

select id as k1 from brooq.enqueue('t.settle.bo', '{"n": "dead"}', priority => 110) \gset
select lease_token as k1_tok from brooq.claim('w1', array['t.settle.bo']) where id = :k1 \gset
select is(brooq.settle(:k1, 'w1', :k1_tok, 'dead', error => 'never fits'), 'dead', 'dead on attempt 1 of 10 returns dead');
select results_eq(format($$ select state::text, attempts, last_error, locked_by from brooq.job where id = %s $$, :k1),
    $$ values ('dead'::text, 1, 'never fits'::text, null::text) $$, 'settle passes dead through: dead at once, the error recorded');

-- Errors, and nothing written ---------------------------------------------------------

select id as e1 from brooq.enqueue('t.settle.bo', '{"n": "errors"}', priority => 103) \gset
select lease_token as e1_tok from brooq.claim('w1', array['t.settle.bo']) where id = :e1 \gset
select throws_ok(format($$ select brooq.settle(%s, 'w1', %s, 'bogus') $$, :e1, :e1_tok), '22023',
    format('unknown outcome "bogus" for job %s', :e1), 'an unknown outcome is 22023');
select throws_ok(format($$ select brooq.settle(%s, 'w1', %s, 'Done') $$, :e1, :e1_tok), '22023',
    format('unknown outcome "Done" for job %s', :e1), 'outcomes are lowercase: Done is 22023');
select throws_ok(format($$ select brooq.settle(%s, 'w1', %s, 'delay') $$, :e1, :e1_tok), '22023',
    format('invalid delay NULL for job %s', :e1), 'delay without a delay is 22023');
select throws_ok(format($$ select brooq.settle(%s, 'w1', %s, 'delay', delay => '-1 second') $$, :e1, :e1_tok), '22023',
    format('invalid delay -00:00:01 for job %s', :e1), 'a negative delay is 22023');
select throws_ok(format($$ select brooq.settle(%s, 'w1', %s, 'preserve', delay => '-1 second') $$, :e1, :e1_tok), '22023',
    null, 'a negative delay with preserve is 22023');
select throws_ok(format($$ select brooq.settle(%s, 'w1', %s, 'dead') $$, :e1, :e1_tok), '22023',
    format('outcome dead without an error for job %s', :e1), 'dead without an error is 22023');
select throws_ok(format($$ select brooq.settle(null, 'w1', %s, 'done') $$, :e1_tok), '22004', null, 'a NULL job_id is 22004');
select throws_ok(format($$ select brooq.settle(%s, null, %s, 'done') $$, :e1, :e1_tok), '22004', null, 'a NULL worker is 22004');
select throws_ok(format($$ select brooq.settle(%s, 'w1', null, 'done') $$, :e1), '22004', null, 'a NULL lease_token is 22004');
select throws_ok(format($$ select brooq.settle(%s, 'w1', %s, null) $$, :e1, :e1_tok), '22004', null, 'a NULL outcome is 22004');
select results_eq(format($$ select state::text, locked_by, attempts, last_error from brooq.job where id = %s $$, :e1),
    $$ values ('processing'::text, 'w1'::text, 1, null::text) $$, 'no rejected settle wrote anything');
select is(brooq.settle(-42, 'w1', 1, 'done'), null, 'an unknown job id returns NULL');

-- Privileges ---------------------------------------------------------------------------

set local role brooq_producer;
select throws_ok(format($$ select brooq.settle(%s, 'w1', %s, 'done') $$, :e1, :e1_tok), '42501',
    'permission denied for function settle', 'brooq_producer cannot settle');
reset role;
set local role brooq_admin;
select is(brooq.settle(:e1, 'w1', :e1_tok, 'done', result => '{"by": "admin"}'), 'done', 'brooq_admin can settle');
reset role;
select id as w1j from brooq.enqueue('t.settle.bo', '{"n": "worker"}', priority => 104) \gset
select lease_token as w1j_tok from brooq.claim('w1', array['t.settle.bo']) where id = :w1j \gset
set local role brooq_worker;
select is(brooq.settle(:w1j, 'w1', :w1j_tok, 'done'), 'done', 'brooq_worker can settle');
select throws_ok($$ select count(*) from brooq.job $$, '42501', 'permission denied for table job',
    'brooq_worker cannot read brooq.job');
reset role;

select * from finish();
rollback;
