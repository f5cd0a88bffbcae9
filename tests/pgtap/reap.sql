-- brooq.reap: structure, behaviour (expired leases back to pending, attempts
-- kept, not dead past the last attempt, unexpired untouched, max_jobs, oldest
-- expiry first, the poison pill: max_lease_losses reaps in a row make a job dead,
-- an outcome resets the count), then privileges under switched roles.
begin;
select plan(38);

-- Structure -------------------------------------------------------------------

select has_function('brooq', 'reap', array['integer']);
select function_returns('brooq', 'reap', array['integer'], 'setof brooq.reaped', 'reap returns setof brooq.reaped');
select is_definer('brooq', 'reap', array['integer']);

-- Behaviour -----------------------------------------------------------------------

set local timezone = 'UTC';  -- last_error spells the expiry in the session's time zone
set local brooq.now = '2030-01-01 00:00:00+00';
select lives_ok($$ select brooq.declare_topic('t.reap', max_attempts => 1) $$, 'declare a topic with one attempt');
select id as a from brooq.enqueue('t.reap', '{"n": "a"}', priority => 2) \gset
select id as b from brooq.enqueue('t.reap', '{"n": "b"}', priority => 1) \gset
select lease_token as a_tok from brooq.claim('worker-a', array['t.reap'], lease => '30 seconds') \gset
select lease_token as b_tok from brooq.claim('worker-b', array['t.reap'], lease => '10 minutes') \gset

set local brooq.now = '2030-01-01 00:00:30+00';
select is_empty($$ select * from brooq.reap() where topic = 't.reap' $$, 'a lease ending exactly now is not expired yet');

set local brooq.now = '2030-01-01 00:00:31+00';
select results_eq($$ select id, topic from brooq.reap() where topic = 't.reap' $$,
    format($$ values (%s::bigint, 't.reap'::text) $$, :a), 'reap returns (id, topic) of the expired job only');
select results_eq(
    format($$ select state::text, attempts, available_at, locked_by, locked_until, lease_token, updated_at
                from brooq.job where id = %s $$, :a),
    format($$ values ('pending'::text, 1, timestamptz '2030-01-01 00:00:31+00', null::text, null::timestamptz, %s::bigint,
                      timestamptz '2030-01-01 00:00:31+00') $$, :a_tok),
    'the expired job is pending, ready now, attempts unchanged, lease cleared, lease_token kept');
select is((select last_error from brooq.job where id = :a),
    'lease of worker worker-a expired at 2030-01-01 00:00:30+00; job returned to the queue',
    'last_error says whose lease expired, and when');
select results_eq(format($$ select state::text, locked_by, locked_until from brooq.job where id = %s $$, :b),
    $$ values ('processing'::text, 'worker-b'::text, timestamptz '2030-01-01 00:10:00+00') $$,
    'a job whose lease has not expired is untouched');
select is_empty($$ select * from brooq.reap() where topic = 't.reap' $$, 'a second reap finds nothing more');

-- a reap never makes a job dead, even past its last attempt
create temp table c_claim on commit drop as
select id, attempt, max_attempts, lease_token from brooq.claim('worker-c', array['t.reap'], lease => '1 second');
select lease_token as c_tok from c_claim \gset
select results_eq($$ select id, attempt, max_attempts from c_claim $$,
    format($$ values (%s::bigint, 2, 1) $$, :a), 'the reaped job is claimed again (attempt 2 of max 1)');
set local brooq.now = '2030-01-01 00:01:00+00';
select results_eq($$ select id from brooq.reap() where topic = 't.reap' $$, array[:a::bigint], 'and expires again');
select results_eq(format($$ select state::text, attempts from brooq.job where id = %s $$, :a),
    $$ values ('pending'::text, 2) $$, 'a reap past the last attempt still returns the job to pending, not dead');

-- the holder of a reaped job is fenced off
select is(brooq.settle(:a, 'worker-a', :a_tok, 'done'), null, 'the first holder''s settle returns NULL');
select is_empty(format($$ select * from brooq.heartbeat('worker-c', array[%s], '30 seconds', array[%s]) $$, :a, :c_tok), 'the last holder''s heartbeat omits it');

-- max_jobs, oldest expiry first
select lives_ok($$ select brooq.declare_topic('t.reap.many') $$, 'declare a second topic');
select lives_ok($$ select brooq.enqueue_many('t.reap.many', array_fill('{}'::jsonb, array[5])) $$, 'five jobs');
create temp table held on commit drop as
select c.id, c.locked_until
  from generate_series(1, 5) as g(n),
       lateral brooq.claim('w' || g.n, array['t.reap.many'], lease => make_interval(secs => g.n)) as c;
select is((select count(distinct locked_until)::int from held), 5, 'five leases ending one second apart');
set local brooq.now = '2030-01-01 00:02:00+00';
select set_eq($$ select id from brooq.reap(max_jobs => 2) where topic = 't.reap.many' $$,
    $$ select id from held order by locked_until limit 2 $$, 'max_jobs bounds a reap, oldest expiry first');
select is((select count(*)::int from brooq.job where id in (select id from held) and state = 'processing'), 3,
    'three are still processing');
select is((select count(*)::int from brooq.reap(max_jobs => 100000) where topic = 't.reap.many'), 3, 'the next reap takes the rest');

-- The poison pill: max_lease_losses reaps in a row -------------------------------------

select lives_ok($$ select brooq.declare_topic('t.poison', max_attempts => 10, backoff_max => '1 second',
                                               max_lease_losses => 3) $$, 'a topic with max_lease_losses 3');
set local brooq.now = '2030-01-01 00:10:00+00';
select id as p from brooq.enqueue('t.poison', '{}') \gset
select is((select lease_losses from brooq.job where id = :p), 0, 'a new job has lost no lease');
select claim.id from brooq.claim('w-p1', array['t.poison'], lease => '1 second') \gset
set local brooq.now = '2030-01-01 00:10:02+00';
select results_eq($$ select id from brooq.reap() where topic = 't.poison' $$, array[:p::bigint], 'a first reap');
select claim.id from brooq.claim('w-p2', array['t.poison'], lease => '1 second') \gset
set local brooq.now = '2030-01-01 00:10:04+00';
select results_eq($$ select id from brooq.reap() where topic = 't.poison' $$, array[:p::bigint], 'a second reap');
select results_eq(format($$ select state::text, attempts, lease_losses from brooq.job where id = %s $$, :p),
    $$ values ('pending'::text, 2, 2) $$, 'two reaps in a row: pending, attempts kept, lease_losses 2');
select lease_token as p_tok from brooq.claim('w-p3', array['t.poison'], lease => '1 second') \gset
select is(brooq.settle(:p, 'w-p3', :p_tok, 'failed', error => 'handler failed')::text, 'failed', 'then a settled failure');
select results_eq(format($$ select state::text, attempts, lease_losses from brooq.job where id = %s $$, :p),
    $$ values ('failed'::text, 3, 0) $$, 'an outcome written resets lease_losses to 0');
set local brooq.now = '2030-01-01 00:10:10+00';
select claim.id from brooq.claim('w-p4', array['t.poison'], lease => '1 second') \gset
set local brooq.now = '2030-01-01 00:10:12+00';
select r.id as reaped from brooq.reap() r where r.topic = 't.poison' \gset
select claim.id from brooq.claim('w-p5', array['t.poison'], lease => '1 second') \gset
set local brooq.now = '2030-01-01 00:10:14+00';
select r.id as reaped from brooq.reap() r where r.topic = 't.poison' \gset
select results_eq(format($$ select state::text, lease_losses from brooq.job where id = %s $$, :p),
    $$ values ('pending'::text, 2) $$, 'two reaps in a row again: still pending');
select claim.id from brooq.claim('w-p6', array['t.poison'], lease => '1 second') \gset
set local brooq.now = '2030-01-01 00:10:16+00';
select results_eq($$ select id, topic from brooq.reap() where topic = 't.poison' $$,
    format($$ values (%s::bigint, 't.poison'::text) $$, :p), 'the third reap in a row returns the job');
select results_eq(
    format($$ select state::text, attempts, lease_losses, locked_by, locked_until, updated_at
                from brooq.job where id = %s $$, :p),
    $$ values ('dead'::text, 6, 3, null::text, null::timestamptz, timestamptz '2030-01-01 00:10:16+00') $$,
    'and makes it dead at max_lease_losses: attempts unchanged (6 of 10), lease cleared');
select is((select last_error from brooq.job where id = :p),
    'lease lost 3 times in a row (max_lease_losses 3), the last of worker w-p6 expired at 2030-01-01 00:10:15+00; job dead',
    'last_error says why the job is dead');
set local brooq.now = '2030-01-01 00:11:00+00';
select is_empty($$ select * from brooq.claim('w-p7', array['t.poison']) $$, 'a dead job is never claimed again');

-- Errors -------------------------------------------------------------------------------

select throws_ok($$ select brooq.reap(0) $$, '22023', 'invalid max_jobs 0', 'max_jobs 0 is 22023');
select throws_ok($$ select brooq.reap(100001) $$, '22023', 'invalid max_jobs 100001', 'max_jobs over 100000 is 22023');
select throws_ok($$ select brooq.reap(null) $$, '22004', 'brooq.reap: max_jobs must not be NULL', 'a NULL max_jobs is 22004');

-- Privileges ---------------------------------------------------------------------------

set local role brooq_producer;
select throws_ok($$ select brooq.reap() $$, '42501', 'permission denied for function reap', 'brooq_producer cannot reap');
reset role;
select lease_token from brooq.claim('w9', array['t.reap.many'], lease => '1 second') \gset
set local brooq.now = '2030-01-01 00:12:00+00';
set local role brooq_worker;
select is((select count(*)::int from brooq.reap() where topic = 't.reap.many'), 1, 'brooq_worker can reap');
reset role;

select * from finish();
rollback;
