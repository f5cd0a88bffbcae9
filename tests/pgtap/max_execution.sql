-- max_execution: a job's time across all its attempts, from its first
-- claim. declare_topic's validation; claim (first_claimed_at kept, the lease bounded
-- by the deadline, execution_deadline and execution_left, a job already past it);
-- heartbeat (never past the deadline, not renewed once it has come); reap (a lease
-- that ran to the deadline is a failed attempt with its cause, dead only on the last
-- attempt; a lease that expired earlier is an ordinary reap); a re-drive's fresh
-- budget (brooq.retry); brooq.topic_stats.
begin;
select plan(44);

set local timezone = 'UTC';  -- last_error spells instants in the session's time zone

-- declare_topic -----------------------------------------------------------------------

select lives_ok($$ select brooq.declare_topic('t.mx.none') $$, 'declare a topic without max_execution');
select is((select max_execution from brooq.topic where name = 't.mx.none'), null::interval,
    'max_execution defaults to NULL: no limit');
select lives_ok($$ select brooq.declare_topic('t.mx.set', max_execution => '5 minutes') $$,
    'declare a topic with max_execution 5 minutes');
select is((select max_execution from brooq.topic where name = 't.mx.set'), interval '5 minutes', 'it is stored');
select is((select max_execution from brooq.topic_stats where topic = 't.mx.set'), interval '5 minutes',
    'brooq.topic_stats shows it');
select lives_ok($$ select brooq.declare_topic('t.mx.set') $$, 'a declaration without it');
select is((select max_execution from brooq.topic where name = 't.mx.set'), null::interval,
    'takes the default again: a declaration is the whole truth');
select throws_ok($$ select brooq.declare_topic('t.mx.bad', max_execution => '0 seconds') $$, '22023',
    'invalid max_execution 00:00:00 for topic "t.mx.bad"', 'zero is refused');
select throws_ok($$ select brooq.declare_topic('t.mx.bad', max_execution => '500 milliseconds') $$, '22023',
    'invalid max_execution 00:00:00.5 for topic "t.mx.bad"', 'below one second is refused');
select throws_ok($$ select brooq.declare_topic('t.mx.bad', max_execution => '-1 minute') $$, '22023',
    'invalid max_execution -00:01:00 for topic "t.mx.bad"', 'a negative one is refused');
select throws_ok($$ select brooq.declare_topic('t.mx.bad', max_execution => '101 years') $$, '22023',
    'invalid max_execution 101 years for topic "t.mx.bad"', 'above 100 years is refused');
select throws_ok($$ select brooq.declare_topic('t.mx.bad', max_execution => '1 day -1 hour') $$, '22023',
    'invalid max_execution 1 day -01:00:00 for topic "t.mx.bad"', 'a negative part is refused');
select is((select count(*)::int from brooq.topic where name = 't.mx.bad'), 0, 'a refused declaration writes nothing');
select lives_ok($$
    do $do$ begin
        perform brooq.declare_topic('t.mx.bad', max_execution => '0 seconds');
    exception when invalid_parameter_value then
        declare v_hint text; begin
            get stacked diagnostics v_hint = pg_exception_hint;
            if v_hint not like 'max_execution must be between 1 second and 100 years%' then
                raise exception 'hint: %', v_hint;
            end if;
        end;
    end $do$ $$, 'the hint says the range');

-- claim ---------------------------------------------------------------------------------

select lives_ok($$ select brooq.declare_topic('t.mx', max_attempts => 3, backoff_base => '10 seconds',
                                               backoff_max => '10 seconds', max_execution => '1 minute') $$,
    'a topic with max_execution 1 minute, 3 attempts, a 10-second backoff');
set local brooq.now = '2030-01-01 00:00:00+00';
select id as a from brooq.enqueue('t.mx', '{"n": "a"}') \gset
select is((select first_claimed_at from brooq.job where id = :a), null::timestamptz, 'a queued job was never claimed');

create temp table c1 on commit drop as
select * from brooq.claim('w1', array['t.mx'], lease => '30 seconds');
select results_eq($$ select attempt, locked_until, execution_deadline, execution_left from c1 $$,
    $$ values (1, timestamptz '2030-01-01 00:00:30+00', timestamptz '2030-01-01 00:01:00+00', interval '1 minute') $$,
    'the first claim: the deadline is the claim + max_execution, all of it left, the lease as asked');
select is((select first_claimed_at from brooq.job where id = :a), timestamptz '2030-01-01 00:00:00+00',
    'first_claimed_at is the first claim');
select lease_token as a1 from c1 \gset

-- heartbeat: bounded by the deadline
set local brooq.now = '2030-01-01 00:00:40+00';
select results_eq(format($$ select * from brooq.heartbeat('w1', array[%s], '30 seconds', array[%s]) $$, :a, :a1),
    array[:a::bigint], 'a heartbeat before the deadline renews');
select is((select locked_until from brooq.job where id = :a), timestamptz '2030-01-01 00:01:00+00',
    'but not past the deadline (now + lease would be 00:01:10)');
set local brooq.now = '2030-01-01 00:01:00+00';
select is_empty(format($$ select * from brooq.heartbeat('w1', array[%s], '30 seconds', array[%s]) $$, :a, :a1),
    'at the deadline, the job is no longer renewed: its id is missing (the lease is lost)');
select is((select locked_until from brooq.job where id = :a), timestamptz '2030-01-01 00:01:00+00',
    'and its lease is unchanged');

-- reap: the lease ran to the deadline, a failed attempt
set local brooq.now = '2030-01-01 00:01:01+00';
select results_eq($$ select id from brooq.reap() where topic = 't.mx' $$, array[:a::bigint], 'reap takes it');
select results_eq(format($$ select state::text, attempts, lease_losses, locked_by,
                                  available_at between timestamptz '2030-01-01 00:01:06+00'
                                                   and timestamptz '2030-01-01 00:01:11+00'
                             from brooq.job where id = %s $$, :a),
    $$ values ('failed'::text, 1, 0, null::text, true) $$,
    'as a failed attempt: failed, attempts unchanged, retried after the backoff, no lease loss counted');
select is((select last_error from brooq.job where id = :a),
    'max_execution 00:01:00 exceeded (first claimed at 2030-01-01 00:00:00+00, deadline 2030-01-01 00:01:00+00); the attempt of worker w1 was stopped',
    'last_error records the cause');

-- a claim past the deadline
set local brooq.now = '2030-01-01 00:02:00+00';
create temp table c2 on commit drop as
select * from brooq.claim('w2', array['t.mx'], lease => '30 seconds');
select results_eq($$ select id, attempt, locked_until, execution_deadline, execution_left from c2 $$,
    format($$ values (%s::bigint, 2, timestamptz '2030-01-01 00:02:00+00', timestamptz '2030-01-01 00:01:00+00',
                      interval '0') $$, :a),
    'a job past its deadline is claimed (attempt charged) with nothing left and a lease that ends at the claim');
select is((select first_claimed_at from brooq.job where id = :a), timestamptz '2030-01-01 00:00:00+00',
    'first_claimed_at is kept');
select lease_token as a2 from c2 \gset
select is(brooq.settle(:a, 'w2', :a2, 'failed', error => 'max_execution exceeded'), 'failed'::brooq.job_state,
    'the worker settles it failed without running the handler: not dead, attempts remain');

-- the last attempt: reap makes it dead, as a failure on the last attempt
set local brooq.now = '2030-01-01 00:03:00+00';
select lease_token as a3 from brooq.claim('w3', array['t.mx'], lease => '30 seconds') \gset
select is((select attempts from brooq.job where id = :a), 3, 'the third and last attempt');
set local brooq.now = '2030-01-01 00:03:01+00';
select results_eq($$ select id from brooq.reap() where topic = 't.mx' $$, array[:a::bigint], 'reap takes it');
select results_eq(format($$ select state::text, attempts from brooq.job where id = %s $$, :a),
    $$ values ('dead'::text, 3) $$, 'dead: a recorded failure on the last attempt');
select is((select last_error from brooq.job where id = :a),
    'max_execution 00:01:00 exceeded (first claimed at 2030-01-01 00:00:00+00, deadline 2030-01-01 00:01:00+00); the attempt of worker w3 was stopped; job dead (last attempt)',
    'last_error records the cause and the end');

-- a re-drive (brooq.retry) gives a fresh max_execution budget, beside fresh attempts
set local brooq.now = '2030-01-01 01:00:00+00';
select ok(brooq.retry(:a), 're-drive the dead job');
select execution_left as left_after_retry, lease_token as a4 from brooq.claim('w3', array['t.mx'], lease => '30 seconds') \gset
select is(:'left_after_retry'::interval, interval '1 minute', 'its next claim has the whole max_execution again');
select is(brooq.settle(:a, 'w3', :a4, 'done'), 'done'::brooq.job_state, 'and it may end done');

-- a lease that expires before the deadline: an ordinary reap
set local brooq.now = '2030-01-02 00:00:00+00';
select id as b from brooq.enqueue('t.mx', '{"n": "b"}') \gset
select results_eq($$ select execution_left, locked_until from brooq.claim('w4', array['t.mx'], lease => '10 seconds') $$,
    $$ values (interval '1 minute', timestamptz '2030-01-02 00:00:10+00') $$, 'a short lease, well before the deadline');
set local brooq.now = '2030-01-02 00:00:20+00';
select results_eq($$ select id from brooq.reap() where topic = 't.mx' $$, array[:b::bigint], 'the lease expires');
select results_eq(format($$ select state::text, attempts, lease_losses from brooq.job where id = %s $$, :b),
    $$ values ('pending'::text, 1, 1) $$, 'an ordinary reap: pending, attempts unchanged, a lease loss');
select is((select last_error from brooq.job where id = :b),
    'lease of worker w4 expired at 2030-01-02 00:00:10+00; job returned to the queue', 'with its usual note');
set local brooq.now = '2030-01-02 00:00:30+00';
select results_eq($$ select execution_deadline, execution_left from brooq.claim('w5', array['t.mx'], lease => '10 seconds') $$,
    $$ values (timestamptz '2030-01-02 00:01:00+00', interval '30 seconds') $$,
    'the next claim counts from the first one: 30 seconds left');

-- a topic without max_execution: no bound, NULLs, first_claimed_at recorded all the same
set local brooq.now = '2030-01-03 00:00:00+00';
select id as c from brooq.enqueue('t.mx.none', '{}') \gset
select results_eq($$ select locked_until, execution_deadline, execution_left
                      from brooq.claim('w6', array['t.mx.none'], lease => '50 minutes') $$,
    $$ values (timestamptz '2030-01-03 00:50:00+00', null::timestamptz, null::interval) $$,
    'without max_execution: the lease as asked, no deadline');
select is((select first_claimed_at from brooq.job where id = :c), timestamptz '2030-01-03 00:00:00+00',
    'first_claimed_at is recorded all the same (a max_execution declared later counts from it)');

-- several topics in one claim: each job gets its own topic's deadline
set local brooq.now = '2030-01-04 00:00:00+00';
select lives_ok($$ select brooq.declare_topic('t.mx.two', max_execution => '2 minutes') $$, 'a second topic, 2 minutes');
select id as d from brooq.enqueue('t.mx', '{}') \gset
select id as e from brooq.enqueue('t.mx.two', '{}') \gset
select id as f from brooq.enqueue('t.mx.none', '{}') \gset
select results_eq($$ select topic, execution_deadline, execution_left, locked_until
                      from brooq.claim('w7', array['t.mx', 't.mx.two', 't.mx.none'], max_jobs => 10, lease => '90 seconds')
                     order by topic $$,
    $$ values ('t.mx'::text, timestamptz '2030-01-04 00:01:00+00', interval '1 minute', timestamptz '2030-01-04 00:01:00+00'),
              ('t.mx.none', null, null, timestamptz '2030-01-04 00:01:30+00'),
              ('t.mx.two', timestamptz '2030-01-04 00:02:00+00', interval '2 minutes', timestamptz '2030-01-04 00:01:30+00') $$,
    'a claim of several topics: each job bounded by its own topic''s max_execution');

select * from finish();
rollback;
