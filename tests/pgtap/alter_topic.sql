-- brooq.alter_topic: structure, behaviour (only the settings named change, clear
-- sets the flow limits and max_execution back to none, the checks and errors of
-- declare_topic, nothing written on failure), the view brooq.topics, privileges.
begin;
select plan(35);

-- Structure -------------------------------------------------------------------

select has_function('brooq', 'alter_topic',
    array['text', 'integer', 'interval', 'interval', 'interval', 'integer', 'boolean', 'interval', 'integer', 'integer', 'integer', 'interval', 'interval', 'boolean', 'boolean', 'text[]']);
select function_returns('brooq', 'alter_topic',
    array['text', 'integer', 'interval', 'interval', 'interval', 'integer', 'boolean', 'interval', 'integer', 'integer', 'integer', 'interval', 'interval', 'boolean', 'boolean', 'text[]'], 'brooq.topic',
    'alter_topic returns the stored topic row');
select is_definer('brooq', 'alter_topic',
    array['text', 'integer', 'interval', 'interval', 'interval', 'integer', 'boolean', 'interval', 'integer', 'integer', 'integer', 'interval', 'interval', 'boolean', 'boolean', 'text[]']);
select is(
    (select array_agg(a.n order by a.i) from pg_proc p, unnest(p.proargnames) with ordinality a(n, i)
      where p.oid = 'brooq.declare_topic'::regproc),
    (select array_agg(a.n order by a.i) from pg_proc p, unnest(p.proargnames) with ordinality a(n, i)
      where p.proname = 'alter_topic' and p.pronamespace = 'brooq'::regnamespace and a.n <> 'clear'),
    'alter_topic takes every setting of declare_topic, in its order, then clear');
select has_view('brooq', 'topics', 'the view brooq.topics');
select columns_are('brooq', 'topics', array['name', 'max_attempts', 'backoff_base', 'backoff_max', 'retention',
    'max_payload_bytes', 'notify', 'max_lease', 'max_lease_losses', 'max_in_flight', 'rate', 'per',
    'max_execution', 'retain_done', 'retain_payload', 'paused', 'created_at', 'updated_at']);

-- Behaviour: only what is named changes -------------------------------------------

set local brooq.now = '2030-01-01 00:00:00+00';
select lives_ok($$ select brooq.declare_topic('t.alt', max_attempts => 7, backoff_base => '2 seconds',
    backoff_max => '5 minutes', retention => '1 day', max_payload_bytes => 4096, notify => false,
    max_lease => '10 minutes', max_lease_losses => 3, max_in_flight => 4, rate => 10, per => '2 seconds',
    max_execution => '1 hour', retain_done => false, retain_payload => false) $$, 'declare with every setting');
select brooq.pause_topic('t.alt');
set local brooq.now = '2030-01-01 00:01:00+00';

select results_eq(
    $$ select name, max_attempts, rate, per, max_in_flight, paused, created_at, updated_at
         from brooq.alter_topic('t.alt', rate => 5) $$,
    $$ values ('t.alt'::text, 7, 5, interval '2 seconds', 4, true,
               timestamptz '2030-01-01 00:00:00+00', timestamptz '2030-01-01 00:01:00+00') $$,
    'alter_topic(rate => 5): rate changes, paused and created_at stay, updated_at moves');
select results_eq(
    $$ select max_attempts, backoff_base, backoff_max, retention, max_payload_bytes, notify, max_lease,
              max_lease_losses, max_in_flight, rate, per, max_execution, retain_done, retain_payload
         from brooq.topics where name = 't.alt' $$,
    $$ values (7, interval '2 seconds', interval '5 minutes', interval '1 day', 4096, false, interval '10 minutes',
               3, 4, 5, interval '2 seconds', interval '1 hour', false, false) $$,
    'every other setting kept');
select results_eq(
    $$ select max_attempts, notify, retain_done from brooq.alter_topic('t.alt', max_attempts => 2, notify => true,
                                                                       retain_done => true) $$,
    $$ values (2, true, true) $$, 'several settings at once, booleans back to true');
select results_eq($$ select max_attempts, rate from brooq.alter_topic('t.alt') $$, $$ values (2, 5) $$,
    'nothing named: nothing changes');

-- clear ---------------------------------------------------------------------------

select results_eq($$ select max_in_flight, max_execution, rate from brooq.alter_topic('t.alt',
                       clear => array['max_in_flight', 'max_execution']) $$,
    $$ values (null::integer, null::interval, 5) $$, 'clear max_in_flight and max_execution: none');
select results_eq($$ select rate, per from brooq.alter_topic('t.alt', per => '3 seconds') $$,
    $$ values (5, interval '3 seconds') $$, 'per alone, with the rate kept');
select results_eq($$ select rate, per from brooq.alter_topic('t.alt', clear => array['per']) $$,
    $$ values (5, interval '1 second') $$, 'clear per: its default, 1 second');
select results_eq($$ select rate, per from brooq.alter_topic('t.alt', clear => array['rate']) $$,
    $$ values (null::integer, null::interval) $$, 'clear rate: per goes with it');
select results_eq($$ select rate, per from brooq.alter_topic('t.alt', rate => 8) $$,
    $$ values (8, interval '1 second') $$, 'a rate without per: per 1 second, as declare_topic');
select results_eq($$ select max_in_flight from brooq.alter_topic('t.alt', clear => null) $$,
    $$ values (null::integer) $$, 'clear => NULL: clear nothing');

-- Errors: as declare_topic, nothing written -----------------------------------------

select throws_ok($$ select brooq.alter_topic(null) $$, '22004', 'brooq.alter_topic: name must not be NULL',
    'a NULL name: 22004');
select throws_ok($$ select brooq.alter_topic('t.nope', rate => 1) $$, '42704', 'topic "t.nope" does not exist',
    'an unknown topic: 42704');
select throws_ok($$ select brooq.alter_topic(repeat('x', 300)) $$, '42704',
    format('topic "%s" does not exist', repeat('x', 200)), 'an unknown name is cut short');
select throws_ok($$ select brooq.alter_topic('t.alt', max_attempts => 0) $$, '22023',
    'invalid max_attempts 0 for topic "t.alt"', 'max_attempts out of range: the error of declare_topic');
select throws_ok($$ select brooq.alter_topic('t.alt', backoff_max => '1 second', backoff_base => '2 seconds') $$, '22023',
    'invalid backoff_max 00:00:01 for topic "t.alt": below backoff_base 00:00:02', 'backoff_max below backoff_base');
select throws_ok($$ select brooq.alter_topic('t.alt', backoff_base => '10 minutes') $$, '22023',
    'invalid backoff_max 00:05:00 for topic "t.alt": below backoff_base 00:10:00',
    'a new backoff_base is checked against the stored backoff_max');
select throws_ok($$ select brooq.alter_topic('t.alt', max_lease => '8 days') $$, '22023',
    'invalid max_lease 8 days for topic "t.alt"', 'max_lease out of range');
select throws_ok($$ select brooq.alter_topic('t.alt', max_in_flight => 0) $$, '22023',
    'invalid max_in_flight 0 for topic "t.alt"', 'max_in_flight out of range');
select throws_ok($$ select brooq.alter_topic('t.alt', clear => array['rate'], per => '2 seconds') $$, '22023',
    'per 00:00:02 given without a rate for topic "t.alt"', 'rate cleared with a per given: per without a rate');
select throws_ok($$ select brooq.alter_topic('t.alt', max_execution => '-1 hour') $$, '22023',
    'invalid max_execution -01:00:00 for topic "t.alt"', 'max_execution negative');
select throws_ok($$ select brooq.alter_topic('t.alt', clear => array['max_attempts']) $$, '22023',
    'cannot clear "max_attempts" of topic "t.alt"', 'clear names only the settings whose NULL means none');
select throws_ok($$ select brooq.alter_topic('t.alt', clear => array[null]::text[]) $$, '22023',
    'cannot clear "NULL" of topic "t.alt"', 'a NULL in clear');
select throws_ok($$ select brooq.alter_topic('t.alt', rate => 3, clear => array['rate']) $$, '22023',
    'rate of topic "t.alt" is both given and cleared', 'a setting both given and cleared');
select results_eq($$ select max_attempts, rate, per, max_lease, backoff_base, updated_at from brooq.topics where name = 't.alt' $$,
    $$ values (2, 8, interval '1 second', interval '10 minutes', interval '2 seconds', timestamptz '2030-01-01 00:01:00+00') $$,
    'nothing written by the refused calls');

-- Privileges ---------------------------------------------------------------------

set local role brooq_admin;
select lives_ok($$ select brooq.alter_topic('t.alt', max_attempts => 3) $$, 'admin: alter_topic');
select is((select max_attempts from brooq.topics where name = 't.alt'), 3, 'admin: reads brooq.topics');
reset role;
set local role brooq_worker;
select throws_ok($$ select brooq.alter_topic('t.alt', max_attempts => 4) $$, '42501',
    'permission denied for function alter_topic', 'worker: no alter_topic');
reset role;
set local role brooq_producer;
select throws_ok($$ select * from brooq.topics $$, '42501', 'permission denied for view topics', 'producer: no topics');
reset role;

select * from finish();
rollback;
