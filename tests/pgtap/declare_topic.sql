-- brooq.declare_topic, brooq.pause_topic, brooq.resume_topic: structure,
-- behaviour (create, update, idempotent, every invalid setting, pause skipped by
-- claim), then privileges under switched roles.
begin;
select plan(97);

-- Structure -------------------------------------------------------------------

select has_function('brooq', 'declare_topic',
    array['text', 'integer', 'interval', 'interval', 'interval', 'integer', 'boolean', 'interval', 'integer', 'integer', 'integer', 'interval', 'interval', 'boolean', 'boolean']);
select function_returns('brooq', 'declare_topic',
    array['text', 'integer', 'interval', 'interval', 'interval', 'integer', 'boolean', 'interval', 'integer', 'integer', 'integer', 'interval', 'interval', 'boolean', 'boolean'], 'brooq.topic',
    'declare_topic returns the stored topic row');
select is_definer('brooq', 'declare_topic',
    array['text', 'integer', 'interval', 'interval', 'interval', 'integer', 'boolean', 'interval', 'integer', 'integer', 'integer', 'interval', 'interval', 'boolean', 'boolean']);
select has_function('brooq', 'pause_topic', array['text']);
select has_function('brooq', 'resume_topic', array['text']);
select function_returns('brooq', 'pause_topic', array['text'], 'boolean');
select function_returns('brooq', 'resume_topic', array['text'], 'boolean');

-- Behaviour: create, update, idempotent -----------------------------------------

set local brooq.now = '2030-01-01 00:00:00+00';

select results_eq(
    $$ select name, max_attempts, backoff_base, backoff_max, retention, max_payload_bytes, notify, paused,
              created_at, updated_at
         from brooq.declare_topic('t.decl') $$,
    $$ values ('t.decl'::text, 5, interval '1 second', interval '1 minute', interval '30 days', 1048576, true, false,
               timestamptz '2030-01-01 00:00:00+00', timestamptz '2030-01-01 00:00:00+00') $$,
    'a new topic takes the documented defaults and the frozen clock');
select is((select count(*)::int from brooq.topic where name = 't.decl'), 1, 'the topic is stored');

set local brooq.now = '2030-01-01 01:00:00+00';
select results_eq(
    $$ select max_attempts, backoff_base, backoff_max, retention, max_payload_bytes, notify, created_at, updated_at
         from brooq.declare_topic('t.decl', max_attempts => 3, backoff_base => '2 seconds', backoff_max => '10 seconds',
                                  retention => '1 day', max_payload_bytes => 100, notify => false) $$,
    $$ values (3, interval '2 seconds', interval '10 seconds', interval '1 day', 100, false,
               timestamptz '2030-01-01 00:00:00+00', timestamptz '2030-01-01 01:00:00+00') $$,
    'declaring again updates every setting, keeps created_at, moves updated_at');
select results_eq(
    $$ select max_attempts, backoff_base, backoff_max, retention, max_payload_bytes, notify
         from brooq.topic where name = 't.decl' $$,
    $$ values (3, interval '2 seconds', interval '10 seconds', interval '1 day', 100, false) $$,
    'the update is stored');
select results_eq(
    $$ select max_attempts, backoff_base, backoff_max, retention, max_payload_bytes, notify
         from brooq.declare_topic('t.decl', max_attempts => 3, backoff_base => '2 seconds', backoff_max => '10 seconds',
                                  retention => '1 day', max_payload_bytes => 100, notify => false) $$,
    $$ select max_attempts, backoff_base, backoff_max, retention, max_payload_bytes, notify
         from brooq.topic where name = 't.decl' $$,
    'the same declaration again is idempotent');
select is((select count(*)::int from brooq.topic where name = 't.decl'), 1, 'still one row for the topic');
select results_eq(
    $$ select max_attempts, backoff_base, retention, notify from brooq.declare_topic('t.decl') $$,
    $$ values (5, interval '1 second', interval '30 days', true) $$,
    'a declaration is the whole truth: omitted settings return to their defaults');

select lives_ok($$ select brooq.declare_topic('t.edge', max_attempts => 1, backoff_base => '1 microsecond',
                                               backoff_max => '1 microsecond', retention => '0',
                                               max_payload_bytes => 1) $$,
    'the lower bounds are accepted (retention 0 = keep forever, backoff_max = backoff_base)');
select lives_ok($$ select brooq.declare_topic('t.edge', max_attempts => 1000, max_payload_bytes => 268435455) $$,
    'the upper bounds are accepted');
select lives_ok($$ select brooq.declare_topic('t.edge', backoff_max => '100 years', retention => '100 years') $$,
    'backoff_max and retention of 100 years are accepted');
select lives_ok(format($$ select brooq.declare_topic(%L) $$, repeat('a', 128)), 'a 128-character name is accepted');
select lives_ok($$ select brooq.declare_topic('a.b-c_d.0-9') $$, 'lowercase letters, digits, ".", "-" and "_" are accepted');

-- Behaviour: every invalid setting -------------------------------------------------

select throws_ok($$ select brooq.declare_topic('') $$, '22023', 'invalid topic name ""', 'an empty name is 22023');
select throws_ok($$ select brooq.declare_topic('Upper') $$, '22023', 'invalid topic name "Upper"', 'an upper-case name is 22023');
select throws_ok($$ select brooq.declare_topic('a b') $$, '22023', 'invalid topic name "a b"', 'a space is 22023');
select throws_ok($$ select brooq.declare_topic('a/b') $$, '22023', 'invalid topic name "a/b"', 'a slash is 22023');
select throws_ok($$ select brooq.declare_topic('caf' || chr(233)) $$, '22023', 'invalid topic name "caf' || chr(233) || '"',
    'a non-ASCII letter is 22023');
select throws_ok($$ select brooq.declare_topic(E'a\nb') $$, '22023', E'invalid topic name "a\nb"', 'a newline is 22023');
select throws_ok(format($$ select brooq.declare_topic(%L) $$, repeat('a', 129)), '22023',
    format('invalid topic name "%s"', repeat('a', 129)), 'a 129-character name is 22023');
select throws_ok($$ select brooq.declare_topic('t.decl', max_attempts => 0) $$, '22023',
    'invalid max_attempts 0 for topic "t.decl"', 'max_attempts 0 is 22023');
select throws_ok($$ select brooq.declare_topic('t.decl', max_attempts => -1) $$, '22023',
    'invalid max_attempts -1 for topic "t.decl"', 'negative max_attempts is 22023');
select throws_ok($$ select brooq.declare_topic('t.decl', max_attempts => 1001) $$, '22023',
    'invalid max_attempts 1001 for topic "t.decl"', 'max_attempts over 1000 is 22023');
select throws_ok($$ select brooq.declare_topic('t.decl', backoff_base => '0') $$, '22023',
    'invalid backoff_base 00:00:00 for topic "t.decl"', 'a zero backoff_base is 22023');
select throws_ok($$ select brooq.declare_topic('t.decl', backoff_base => '-1 second') $$, '22023',
    'invalid backoff_base -00:00:01 for topic "t.decl"', 'a negative backoff_base is 22023');
select throws_ok($$ select brooq.declare_topic('t.decl', backoff_base => '2 minutes', backoff_max => '1 minute') $$, '22023',
    'invalid backoff_max 00:01:00 for topic "t.decl": below backoff_base 00:02:00', 'backoff_max below backoff_base is 22023');
select throws_ok($$ select brooq.declare_topic('t.decl', retention => '-1 day') $$, '22023',
    'invalid retention -1 days for topic "t.decl"', 'a negative retention is 22023');
select throws_ok($$ select brooq.declare_topic('t.decl', backoff_max => '101 years') $$, '22023',
    'invalid backoff_max 101 years for topic "t.decl": longer than 100 years', 'backoff_max over 100 years is 22023');
select throws_ok($$ select brooq.declare_topic('t.decl', retention => '101 years') $$, '22023',
    'invalid retention 101 years for topic "t.decl": longer than 100 years', 'retention over 100 years is 22023');
select throws_ok($$ select brooq.declare_topic('t.decl', max_payload_bytes => 0) $$, '22023',
    'invalid max_payload_bytes 0 for topic "t.decl"', 'max_payload_bytes 0 is 22023');
select throws_ok($$ select brooq.declare_topic('t.decl', max_payload_bytes => 268435456) $$, '22023',
    'invalid max_payload_bytes 268435456 for topic "t.decl"', 'max_payload_bytes over 256 MiB is 22023');
select throws_ok($$ select brooq.declare_topic('t.decl', max_lease => '8 days') $$, '22023',
    'invalid max_lease 8 days for topic "t.decl"', 'max_lease over 7 days is 22023');
select throws_ok($$ select brooq.declare_topic('t.decl', max_lease => '0.5 seconds') $$, '22023',
    'invalid max_lease 00:00:00.5 for topic "t.decl"', 'max_lease under 1 second is 22023');
select throws_ok($$ select brooq.declare_topic('t.decl', max_lease => '1 day -1 hour') $$, '22023',
    'invalid max_lease 1 day -01:00:00 for topic "t.decl"', 'a mixed-sign max_lease is 22023');
select is((select max_lease from brooq.declare_topic('t.lease', max_lease => '2 days')), interval '2 days',
    'max_lease is stored');
select is((select max_lease_losses from brooq.declare_topic('t.losses')), 5, 'max_lease_losses defaults to 5');
select is((select max_lease_losses from brooq.declare_topic('t.losses', max_lease_losses => 1)), 1,
    'max_lease_losses 1 is accepted and stored');
select is((select max_lease_losses from brooq.declare_topic('t.losses', max_lease_losses => 1000)), 1000,
    'max_lease_losses 1000 is accepted and stored');
select throws_ok($$ select brooq.declare_topic('t.decl', max_lease_losses => 0) $$, '22023',
    'invalid max_lease_losses 0 for topic "t.decl"', 'max_lease_losses 0 is 22023');
select throws_ok($$ select brooq.declare_topic('t.decl', max_lease_losses => 1001) $$, '22023',
    'invalid max_lease_losses 1001 for topic "t.decl"', 'max_lease_losses over 1000 is 22023');
-- the flow limits (their effect on claim: tests/pgtap/flow.sql)
select results_eq($$ select max_in_flight, rate, per from brooq.declare_topic('t.flow') $$,
    $$ values (null::int, null::int, null::interval) $$, 'no flow limit by default');
select results_eq($$ select max_in_flight, rate, per from brooq.declare_topic('t.flow', max_in_flight => 1, rate => 5) $$,
    $$ values (1, 5, interval '1 second') $$, 'max_in_flight 1 is stored; a rate without per is per second');
select results_eq($$ select max_in_flight, rate, per from brooq.declare_topic('t.flow', max_in_flight => 1000000,
                                                                     rate => 1000000, per => '1 day') $$,
    $$ values (1000000, 1000000, interval '1 day') $$, 'the largest limits are accepted');
select results_eq($$ select max_in_flight, rate, per from brooq.declare_topic('t.flow', rate => 1, per => '1 millisecond') $$,
    $$ values (null::int, 1, interval '1 millisecond') $$, 'the smallest window is accepted; a declaration without max_in_flight drops it');
select results_eq($$ select max_in_flight, rate, per from brooq.declare_topic('t.flow') $$,
    $$ values (null::int, null::int, null::interval) $$, 'declared again without limits, the topic has none');
select throws_ok($$ select brooq.declare_topic('t.flow', max_in_flight => 0) $$, '22023',
    'invalid max_in_flight 0 for topic "t.flow"', 'max_in_flight 0 is 22023');
select throws_ok($$ select brooq.declare_topic('t.flow', max_in_flight => 1000001) $$, '22023',
    'invalid max_in_flight 1000001 for topic "t.flow"', 'max_in_flight over 1000000 is 22023');
select throws_ok($$ select brooq.declare_topic('t.flow', rate => 0) $$, '22023',
    'invalid rate 0 for topic "t.flow"', 'rate 0 is 22023');
select throws_ok($$ select brooq.declare_topic('t.flow', rate => 1000001) $$, '22023',
    'invalid rate 1000001 for topic "t.flow"', 'rate over 1000000 is 22023');
select throws_ok($$ select brooq.declare_topic('t.flow', per => '1 second') $$, '22023',
    'per 00:00:01 given without a rate for topic "t.flow"', 'per without rate is 22023');
select throws_ok($$ select brooq.declare_topic('t.flow', rate => 1, per => '0.5 milliseconds') $$, '22023',
    'invalid per 00:00:00.0005 for topic "t.flow"', 'a window under 1 millisecond is 22023');
select throws_ok($$ select brooq.declare_topic('t.flow', rate => 1, per => '25 hours') $$, '22023',
    'invalid per 25:00:00 for topic "t.flow"', 'a window over a day is 22023');
select throws_ok($$ select brooq.declare_topic('t.flow', rate => 1, per => '1 day -1 hour') $$, '22023',
    'invalid per 1 day -01:00:00 for topic "t.flow"', 'a window with a negative part is 22023');
select throws_ok($$ select brooq.declare_topic('t.flow', rate => 1, per => '-1 second') $$, '22023',
    'invalid per -00:00:01 for topic "t.flow"', 'a negative window is 22023');
select is((select max_in_flight from brooq.topic where name = 't.flow'), null, 'a rejected flow limit changed nothing');
select lives_ok($$ select brooq.claim('w', array['t.lease'], lease => '36 hours') $$,
    'claim may then lease up to it');
select throws_ok($$ select brooq.declare_topic(null) $$, '22004',
    'brooq.declare_topic: arguments must not be NULL', 'a NULL name is 22004');
select throws_ok($$ select brooq.declare_topic('t.decl', max_attempts => null) $$, '22004', null, 'NULL max_attempts is 22004');
select throws_ok($$ select brooq.declare_topic('t.decl', backoff_base => null) $$, '22004', null, 'NULL backoff_base is 22004');
select throws_ok($$ select brooq.declare_topic('t.decl', backoff_max => null) $$, '22004', null, 'NULL backoff_max is 22004');
select throws_ok($$ select brooq.declare_topic('t.decl', retention => null) $$, '22004', null, 'NULL retention is 22004');
select throws_ok($$ select brooq.declare_topic('t.decl', max_payload_bytes => null) $$, '22004', null, 'NULL max_payload_bytes is 22004');
select throws_ok($$ select brooq.declare_topic('t.decl', notify => null) $$, '22004', null, 'NULL notify is 22004');
select throws_ok($$ select brooq.declare_topic('t.decl', max_lease_losses => null) $$, '22004', null, 'NULL max_lease_losses is 22004');
select results_eq(
    $$ select max_attempts, backoff_base, retention, max_payload_bytes from brooq.topic where name = 't.decl' $$,
    $$ values (5, interval '1 second', interval '30 days', 1048576) $$,
    'a rejected declaration changed nothing');
select is((select count(*)::int from brooq.topic where name !~ '^[a-z0-9._-]{1,128}$'), 0,
    'no invalid topic was written');

-- Behaviour: pause and resume ----------------------------------------------------

select is(brooq.pause_topic('t.decl'), true, 'pause_topic returns true when it pauses');
select is((select paused from brooq.topic where name = 't.decl'), true, 'the topic is paused');
select is(brooq.pause_topic('t.decl'), false, 'pausing a paused topic returns false');
select is((select paused from brooq.declare_topic('t.decl', max_attempts => 2)), true,
    'declare_topic leaves a paused topic paused');
select throws_ok($$ select brooq.pause_topic('t.nope') $$, '42704', 'topic "t.nope" does not exist',
    'pausing an unknown topic is 42704');
select throws_ok($$ select brooq.resume_topic('t.nope') $$, '42704', 'topic "t.nope" does not exist',
    'resuming an unknown topic is 42704');
select throws_ok($$ select brooq.pause_topic(null) $$, '22004', null, 'pausing a NULL topic is 22004');
select throws_ok($$ select brooq.resume_topic(null) $$, '22004', null, 'resuming a NULL topic is 22004');

select id as paused_job from brooq.enqueue('t.decl', '{"n": 1}') \gset
select ok(:paused_job is not null, 'a paused topic still accepts jobs');
select is_empty($$ select * from brooq.claim('w1', array['t.decl']) $$, 'claim skips a paused topic');
select is((select state::text from brooq.job where id = :paused_job), 'pending', 'the job of a paused topic stays pending');
select is(brooq.resume_topic('t.decl'), true, 'resume_topic returns true when it resumes');
select is(brooq.resume_topic('t.decl'), false, 'resuming a running topic returns false');
select results_eq($$ select id from brooq.claim('w1', array['t.decl']) $$, array[:paused_job::bigint],
    'after resume, claim takes the job');
select is(brooq.pause_topic('t.decl'), true, 'pausing again');
select is((select state::text from brooq.job where id = :paused_job), 'processing', 'a job in flight is not touched by a pause');

-- Privileges ---------------------------------------------------------------------

set local role brooq_admin;
select lives_ok($$ select brooq.declare_topic('t.decl.admin') $$, 'brooq_admin can declare a topic');
select lives_ok($$ select brooq.pause_topic('t.decl.admin') $$, 'brooq_admin can pause a topic');
select lives_ok($$ select brooq.resume_topic('t.decl.admin') $$, 'brooq_admin can resume a topic');
reset role;

set local role brooq_worker;
select throws_ok($$ select brooq.declare_topic('t.decl.worker') $$, '42501',
    'permission denied for function declare_topic', 'brooq_worker cannot declare a topic');
select throws_ok($$ select brooq.pause_topic('t.decl') $$, '42501',
    'permission denied for function pause_topic', 'brooq_worker cannot pause a topic');
select throws_ok($$ select brooq.resume_topic('t.decl') $$, '42501',
    'permission denied for function resume_topic', 'brooq_worker cannot resume a topic');
reset role;

set local role brooq_producer;
select throws_ok($$ select brooq.declare_topic('t.decl.producer') $$, '42501',
    'permission denied for function declare_topic', 'brooq_producer cannot declare a topic');
select throws_ok($$ select brooq.pause_topic('t.decl') $$, '42501',
    'permission denied for function pause_topic', 'brooq_producer cannot pause a topic');
reset role;

select is((select count(*)::int from brooq.topic where name in ('t.decl.worker', 't.decl.producer')), 0,
    'the refused declarations wrote nothing');

select * from finish();
rollback;
