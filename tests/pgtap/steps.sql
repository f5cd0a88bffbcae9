-- Durable steps: brooq.checkpoint, brooq.steps, brooq.sleep, brooq.wait_for_event and
-- brooq.emit_event: structure, then behaviour per rule (a step stored once, by the
-- lease holder only; a sleep and a wait end the attempt without spending it; an
-- event wakes its waiters, reaches a late waiter while kept, never twice; the
-- timeout; cancel, retry, purge, flush and retain_done compose; a missed wake is
-- found by reap; bounds and errors), then privileges under switched roles.
begin;
select plan(94);

-- Structure -------------------------------------------------------------------

select has_function('brooq', 'checkpoint', array['text', 'bigint', 'bigint', 'text', 'jsonb']);
select is_definer('brooq', 'checkpoint', array['text', 'bigint', 'bigint', 'text', 'jsonb']);
select has_function('brooq', 'steps', array['bigint', 'integer']);
select has_function('brooq', 'sleep', array['text', 'bigint', 'bigint', 'text', 'timestamp with time zone', 'interval']);
select has_function('brooq', 'wait_for_event', array['text', 'bigint', 'bigint', 'text', 'text', 'interval']);
select has_function('brooq', 'emit_event', array['text', 'jsonb', 'interval']);
select isnt_definer('brooq', '_wake_missed', array[]::text[]);
select has_pk('brooq', 'job_step', 'job_step: primary key (job_id, name): one row per step name');
select col_is_pk('brooq', 'job_step', array['job_id', 'name'], 'a step is written once per job and name');

-- Behaviour: checkpoint --------------------------------------------------------

set local brooq.now = '2030-01-01 00:00:00+00';
select lives_ok($$ select brooq.declare_topic('t.steps', max_attempts => 3, max_payload_bytes => 100) $$, 'declare the topic');
select id as j from brooq.enqueue('t.steps', '{"order": 42}') \gset
select lease_token as tok from brooq.claim('w1', array['t.steps']) \gset

select results_eq(format($$ select result, created from brooq.checkpoint('w1', %s, %s, 'charge', '{"charge": "ch_1"}') $$, :j, :tok),
    $$ values ('{"charge": "ch_1"}'::jsonb, true) $$, 'the first checkpoint of a step stores it (created)');
select results_eq(format($$ select result, created from brooq.checkpoint('w1', %s, %s, 'charge', '{"charge": "ch_2"}') $$, :j, :tok),
    $$ values ('{"charge": "ch_1"}'::jsonb, false) $$, 'a second checkpoint of the step returns the stored result, not its own');
select is_empty(format($$ select * from brooq.checkpoint('w1', %s, %s, 'other', '1') $$, :j, :tok::bigint + 1),
    'a wrong lease token: no row');
select is_empty(format($$ select * from brooq.checkpoint('w2', %s, %s, 'other', '1') $$, :j, :tok),
    'another worker name: no row');
select is((select count(*)::int from brooq.job_step where job_id = :j and name = 'other'), 0, 'and nothing stored for them');
select throws_ok(format($$ select brooq.checkpoint('w1', %s, %s, 'big', to_jsonb(repeat('x', 200))) $$, :j, :tok), '54000',
    format('result of step "big" of job %s is 202 bytes, larger than the 100 bytes allowed for topic "t.steps"', :j),
    'a result above max_payload_bytes: 54000');
select throws_ok(format($$ select brooq.checkpoint('w1', %s, %s, '', '1') $$, :j, :tok), '22023', 'invalid step name ""',
    'an empty step name: 22023');
select throws_ok(format($$ select brooq.checkpoint('w1', %s, %s, repeat('n', 201), '1') $$, :j, :tok), '22023',
    format('invalid step name "%s"', repeat('n', 40)), 'a step name of 201 characters: 22023, cut short');
select throws_ok(format($$ select brooq.checkpoint('w1', %s, %s, null, '1') $$, :j, :tok), '22004', null,
    'a NULL step name: 22004');
select lives_ok(format($$ select brooq.checkpoint('w1', %s, %s, 'none') $$, :j, :tok), 'a step without a result (NULL)');

-- a failed attempt keeps the steps; the next attempt reads them back
select is(brooq.settle(:j, 'w1', :tok, 'failed', error => 'reserve failed'), 'failed', 'the attempt fails after the charge');
set local brooq.now = '2030-01-01 00:10:00+00';
select lease_token as tok from brooq.claim('w1', array['t.steps']) \gset
select results_eq(format($$ select name, kind, result, attempt from brooq.steps(%s) $$, :j),
    $$ values ('charge', 'step', '{"charge": "ch_1"}'::jsonb, 1), ('none', 'step', null::jsonb, 1) $$,
    'a retry reads the steps of the earlier attempt, in the order finished');
select results_eq(format($$ select result, created from brooq.checkpoint('w1', %s, %s, 'charge', '"again"') $$, :j, :tok),
    $$ values ('{"charge": "ch_1"}'::jsonb, false) $$, 'its checkpoint of a finished step returns the first result');
select results_eq(format($$ select name from brooq.steps(%s, max_steps => 1) $$, :j),
    $$ values ('charge') $$, 'max_steps: the first steps finished only');
select throws_ok(format($$ select * from brooq.steps(%s, max_steps => 0) $$, :j), '22023',
    'brooq.steps: max_steps must be at least 1, not 0', 'max_steps below 1: 22023');
select throws_ok(format($$ select * from brooq.steps(%s, max_steps => null) $$, :j), '22004', null,
    'a NULL max_steps: 22004');

-- a lease lost: the old holder is fenced off, the new one reads what it stored
select lease_token as old_tok from brooq.job where id = :j \gset
update brooq.job set locked_until = '2030-01-01 00:10:01+00' where id = :j;
set local brooq.now = '2030-01-01 00:20:00+00';
select is((select count(*)::int from brooq.reap()), 1, 'the lease expires and is reaped');
select lease_token as tok from brooq.claim('w2', array['t.steps']) \gset
select is_empty(format($$ select * from brooq.checkpoint('w1', %s, %s, 'reserve', '1') $$, :j, :old_tok),
    'the zombie''s checkpoint after the lease loss: no row');
select results_eq(format($$ select result, created from brooq.checkpoint('w2', %s, %s, 'reserve', '{"seat": 7}') $$, :j, :tok),
    $$ values ('{"seat": 7}'::jsonb, true) $$, 'the new holder stores the step');

-- Behaviour: sleep --------------------------------------------------------------------

select throws_ok(format($$ select brooq.sleep('w2', %s, %s, 'nap') $$, :j, :tok), '22023', null,
    'a sleep without until or duration: 22023');
select throws_ok(format($$ select brooq.sleep('w2', %s, %s, 'nap', until => now(), duration => '1 hour') $$, :j, :tok),
    '22023', null, 'a sleep with both: 22023');
select throws_ok(format($$ select brooq.sleep('w2', %s, %s, 'nap', duration => '-1 hour') $$, :j, :tok), '22023',
    'invalid sleep duration -01:00:00', 'a negative duration: 22023');
select throws_ok(format($$ select brooq.sleep('w2', %s, %s, 'charge', duration => '1 hour') $$, :j, :tok), '22023',
    format('step "charge" of job %s is a step, not a sleep', :j), 'a sleep named as a step: 22023');
select attempts as before from brooq.job where id = :j \gset
select results_eq(format($$ select state::text, until from brooq.sleep('w2', %s, %s, 'nap', duration => '1 hour') $$, :j, :tok),
    $$ values ('pending', timestamptz '2030-01-01 01:20:00+00') $$, 'a sleep releases the job until its end');
select results_eq(format($$ select state::text, attempts, available_at, locked_by, locked_until, lease_losses
                              from brooq.job where id = %s $$, :j),
    format($$ values ('pending', %s, timestamptz '2030-01-01 01:20:00+00', null::text, null::timestamptz, 0) $$, :before - 1),
    'pending until then, the attempt given back, no lease');
select is_empty($$ select * from brooq.claim('w3', array['t.steps']) $$, 'nobody claims it before its end');
set local brooq.now = '2030-01-01 01:20:00+00';
select lease_token as tok from brooq.claim('w3', array['t.steps']) \gset
select is((select attempts from brooq.job where id = :j), :before, 'claimed at its end: the same attempt number again');
select results_eq(format($$ select state::text, until from brooq.sleep('w3', %s, %s, 'nap', duration => '5 hours') $$, :j, :tok),
    $$ values ('processing', timestamptz '2030-01-01 01:20:00+00') $$,
    'the sleep''s second call: over (its end fixed at the first call), the handler goes on');
select results_eq(format($$ select state::text from brooq.sleep('w3', %s, %s, 'past', until => '2029-01-01') $$, :j, :tok),
    $$ values ('processing') $$, 'a sleep until a past instant goes on at once');
select is((select state::text from brooq.job where id = :j), 'processing', 'still held');

-- Behaviour: wait_for_event, an emit wakes the waiter --------------------------------------

select throws_ok(format($$ select brooq.wait_for_event('w3', %s, %s, 'pay', '', '1 hour') $$, :j, :tok), '22023',
    'invalid event name ""', 'an empty event name: 22023');
select throws_ok(format($$ select brooq.wait_for_event('w3', %s, %s, 'pay', 'paid:42', '0') $$, :j, :tok), '22023',
    'invalid timeout 00:00:00', 'a zero timeout: 22023');
select results_eq(format($$ select outcome, until from brooq.wait_for_event('w3', %s, %s, 'pay', 'paid:42', '1 day') $$, :j, :tok),
    $$ values ('waiting', timestamptz '2030-01-02 01:20:00+00') $$, 'no event yet: the job waits until its deadline');
select results_eq(format($$ select state::text, attempts, locked_by from brooq.job where id = %s $$, :j),
    format($$ values ('pending', %s, null::text) $$, :before - 1), 'pending, the attempt given back, no lease');
select results_eq(format($$ select name, kind, result from brooq.steps(%s) where kind = 'waiting' $$, :j),
    $$ values ('pay', 'waiting', '{"event": "paid:42", "deadline": "2030-01-02T01:20:00+00:00"}'::jsonb) $$,
    'steps shows the wait in progress');
set local brooq.now = '2030-01-01 02:00:00+00';
select results_eq($$ select woken from brooq.emit_event('paid:41', '{"amount": 1}') $$, $$ values (0) $$,
    'an event of another name wakes nobody');
select results_eq($$ select woken from brooq.emit_event('paid:42', '{"amount": 5}') $$, $$ values (1) $$,
    'the emit of its name makes the waiter ready');
select is((select available_at from brooq.job where id = :j), '2030-01-01 02:00:00+00'::timestamptz, 'ready now');
select lease_token as tok from brooq.claim('w3', array['t.steps']) \gset
select results_eq(format($$ select outcome, payload from brooq.wait_for_event('w3', %s, %s, 'pay', 'paid:42', '1 day') $$, :j, :tok),
    $$ values ('received', '{"amount": 5}'::jsonb) $$, 'its handler, again from the top, receives the payload');
select results_eq(format($$ select outcome, payload from brooq.wait_for_event('w3', %s, %s, 'pay', 'paid:42', '1 day') $$, :j, :tok),
    $$ values ('received', '{"amount": 5}'::jsonb) $$, 'and the same answer on every later call (a stored step)');
select is((select count(*)::int from brooq.job_wait where job_id = :j), 0, 'the wait is over');
select results_eq(format($$ select outcome from brooq.wait_for_event('w3', %s, %s, 'pay.2', 'paid:42', '1 day') $$, :j, :tok),
    $$ values ('waiting') $$, 'an event is received once per job: a second wait for the name waits for a new one');

-- an event emitted before the wait, within its keep: received at once
select id as k from brooq.enqueue('t.steps', '{"order": 43}') \gset
select lives_ok($$ select brooq.emit_event('paid:43', '"early"', keep => '1 hour') $$, 'an event emitted before anyone waits');
select lease_token as ktok from brooq.claim('w4', array['t.steps']) \gset
select results_eq(format($$ select outcome, payload from brooq.wait_for_event('w4', %s, %s, 'pay', 'paid:43', '1 hour') $$, :k, :ktok),
    $$ values ('received', '"early"'::jsonb) $$, 'a later wait receives it at once, the job still held');
select is((select state::text from brooq.job where id = :k), 'processing', 'no release: the handler goes on');

-- past its keep an event is gone; the timeout
select results_eq(format($$ select outcome from brooq.wait_for_event('w4', %s, %s, 'pay.2', 'paid:44', '1 hour') $$, :k, :ktok),
    $$ values ('waiting') $$, 'a wait for an event not emitted yet');
set local brooq.now = '2030-01-01 02:30:00+00';
select lives_ok($$ select brooq.emit_event('paid:other', '1', keep => '1 minute') $$, 'an event kept a minute');
set local brooq.now = '2030-01-01 03:00:00+00';
select lease_token as ktok from brooq.claim('w4', array['t.steps']) \gset
select results_eq(format($$ select outcome, payload from brooq.wait_for_event('w4', %s, %s, 'pay.2', 'paid:44', '5 hours') $$, :k, :ktok),
    $$ values ('timeout', null::jsonb) $$, 'claimed at its deadline with no event: timeout (the first call''s deadline kept)');
select results_eq(format($$ select outcome from brooq.wait_for_event('w4', %s, %s, 'late', 'paid:other', '1 hour') $$, :k, :ktok),
    $$ values ('waiting') $$, 'an event past its keep is not received');
select is((select count(*)::int from brooq.job_step where job_id = :k and kind = 'timeout'), 1, 'the timeout is a stored step');

-- Behaviour: cancel, retry, purge, flush, retain_done ---------------------------------------

select ok(brooq.cancel(:k), 'a waiting job is canceled');
select results_eq($$ select woken from brooq.emit_event('paid:other') $$, $$ values (0) $$, 'an emit never wakes a canceled job');
select is((select state::text from brooq.job where id = :k), 'canceled', 'it never resumes');
select ok(brooq.retry(:k), 're-drive it');
select is((select count(*)::int from brooq.job_step where job_id = :k), 2, 'a re-drive keeps the steps');
select is((select count(*)::int from brooq.job_wait where job_id = :k), 0, 'and forgets the wait, which starts again');
select ok(brooq.cancel(:k), 'canceled again');
select ok(brooq.retry(:k, clear_steps => true), 're-drive it with clear_steps');
select is((select count(*)::int from brooq.job_step where job_id = :k), 0, 'clear_steps clears the steps');

select lives_ok($$ select brooq.declare_topic('t.steps.purge', retention => '1 day') $$, 'a topic kept a day');
select id as p from brooq.enqueue('t.steps.purge', '{}') \gset
select lease_token as ptok from brooq.claim('wp', array['t.steps.purge']) \gset
select lives_ok(format($$ select brooq.checkpoint('wp', %s, %s, 's', '1') $$, :p, :ptok), 'a step of a job to purge');
select is(brooq.settle(:p, 'wp', :ptok, 'done'), 'done', 'done');
set local brooq.now = '2030-01-03 03:00:00+00';
select ok(brooq.purge() >= 1, 'purge deletes the job and expired events');
select is((select count(*)::int from brooq.job_step where job_id = :p), 0, 'purge removes the steps with the job');
select is((select count(*)::int from brooq.event where expires_at <= '2030-01-03 03:00:00+00'), 0, 'and the events past their keep');

select lives_ok($$ select brooq.declare_topic('t.steps.gone', retain_done => false) $$, 'a topic that keeps no done job');
select id as g from brooq.enqueue('t.steps.gone', '{}') \gset
select lease_token as gtok from brooq.claim('wg', array['t.steps.gone']) \gset
select lives_ok(format($$ select brooq.checkpoint('wg', %s, %s, 's', '1') $$, :g, :gtok), 'a step of it');
select is(brooq.settle(:g, 'wg', :gtok, 'done'), 'done', 'settled done: deleted');
select is((select count(*)::int from brooq.job_step where job_id = :g), 0, 'its steps with it');

select id as f from brooq.enqueue('t.steps.gone', '{}') \gset
select lease_token as ftok from brooq.claim('wf', array['t.steps.gone']) \gset
select lives_ok(format($$ select brooq.wait_for_event('wf', %s, %s, 'w', 'never', '1 hour') $$, :f, :ftok), 'a job that waits');
select is(brooq.flush('t.steps.gone'), 1::bigint, 'flushed');
select is((select count(*)::int from brooq.job_wait where job_id = :f), 0, 'flush removes its wait');

-- Behaviour: a wake an emit missed is found by reap -----------------------------------------

select lives_ok($$ select brooq.declare_topic('t.steps.missed') $$, 'a topic of its own');
select id as m from brooq.enqueue('t.steps.missed', '{"order": 45}') \gset
select lease_token as mtok from brooq.claim('wm', array['t.steps.missed']) \gset
select results_eq(format($$ select outcome from brooq.wait_for_event('wm', %s, %s, 'pay', 'paid:45', '1 day') $$, :m, :mtok),
    $$ values ('waiting') $$, 'a job waits');
-- an emit that could not see the wait (as when both commit at once): its row only
insert into brooq.event (name, payload, emitted_at, expires_at, emitted_by, xid)
values ('paid:45', '"missed"', '2030-01-03 03:00:00+00', '2030-01-04 03:00:00+00', 'test', pg_current_xact_id());
select lives_ok($$ select brooq.reap() $$, 'reap');
select is((select available_at from brooq.job where id = :m), '2030-01-03 03:00:00+00'::timestamptz,
    'reap wakes the waiter an emit missed');

-- Errors of emit_event ---------------------------------------------------------------

select throws_ok($$ select brooq.emit_event('') $$, '22023', 'invalid event name ""', 'an empty name: 22023');
select throws_ok($$ select brooq.emit_event(null) $$, '22004', null, 'a NULL name: 22004');
select throws_ok($$ select brooq.emit_event('x', '1', keep => '30 seconds') $$, '22023', 'invalid keep 00:00:30',
    'a keep under a minute: 22023');
select throws_ok($$ select brooq.emit_event('big', to_jsonb(repeat('x', 1048576))) $$, '54000',
    'payload of event "big" is 1048578 bytes, larger than the 1048576 bytes allowed', 'a payload above 1 MiB: 54000');

-- Privileges -------------------------------------------------------------------------

set local role brooq_producer;
select lives_ok($$ select brooq.emit_event('priv:steps') $$, 'producer: emit_event');
select lives_ok(format($$ select * from brooq.steps(%s) $$, :j), 'producer: steps');
select throws_ok(format($$ select brooq.checkpoint('p', %s, 1, 'x') $$, :j), '42501', null, 'producer: no checkpoint');
reset role;
set local role brooq_worker;
select throws_ok($$ select brooq.emit_event('priv:steps') $$, '42501', null, 'worker: no emit_event');
reset role;

select * from finish();
rollback;
