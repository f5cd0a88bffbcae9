-- brooq.cancel: structure, behaviour (pending, failed and processing are
-- canceled; terminal and unknown jobs are not; the holder is fenced off), then
-- privileges under switched roles.
begin;
select plan(29);

-- Structure -------------------------------------------------------------------

select has_function('brooq', 'cancel', array['bigint']);
select function_returns('brooq', 'cancel', array['bigint'], 'boolean');
select is_definer('brooq', 'cancel', array['bigint']);

-- Behaviour -----------------------------------------------------------------------

set local brooq.now = '2030-01-01 00:00:00+00';
select lives_ok($$ select brooq.declare_topic('t.cancel', max_attempts => 1) $$, 'declare the topic');
select lives_ok($$ select brooq.declare_topic('t.cancel.retry', max_attempts => 5) $$, 'declare a topic with retries');

select id as pend from brooq.enqueue('t.cancel', '{"n": "pending"}', available_at => '2030-06-01 00:00:00+00') \gset
set local brooq.now = '2030-01-01 00:00:05+00';
select ok(brooq.cancel(:pend), 'cancel of a pending job returns true');
select results_eq(format($$ select state::text, updated_at, attempts from brooq.job where id = %s $$, :pend),
    $$ values ('canceled'::text, timestamptz '2030-01-01 00:00:05+00', 0) $$, 'the pending job is canceled, updated_at = now');
select is(brooq.cancel(:pend), false, 'canceling it again returns false');

select id as fail from brooq.enqueue('t.cancel.retry', '{"n": "failed"}') \gset
select lease_token as fail_tok from brooq.claim('w1', array['t.cancel.retry']) \gset
select is(brooq.settle(:fail, 'w1', :fail_tok, 'failed', error => 'boom'), 'failed', 'a job waits for a retry');
select ok(brooq.cancel(:fail), 'cancel of a failed (waiting) job returns true');
select results_eq(format($$ select state::text, last_error, attempts from brooq.job where id = %s $$, :fail),
    $$ values ('canceled'::text, 'boom'::text, 1) $$, 'the failed job is canceled, its history kept');

select id as run from brooq.enqueue('t.cancel.retry', '{"n": "processing"}') \gset
select lease_token as run_tok from brooq.claim('w1', array['t.cancel.retry']) \gset
select ok(brooq.cancel(:run), 'cancel of a processing job returns true');
select results_eq(format($$ select state::text, locked_by, locked_until, attempts, lease_token from brooq.job where id = %s $$, :run),
    format($$ values ('canceled'::text, null::text, null::timestamptz, 1, %s::bigint) $$, :run_tok),
    'the processing job is canceled and its lease cleared');
select is_empty(format($$ select * from brooq.heartbeat('w1', array[%s], '30 seconds', array[%s]::bigint[]) $$, :run, :run_tok), 'the holder''s heartbeat omits the id');
select is(brooq.settle(:run, 'w1', :run_tok, 'done', result => '{"late": true}'), null, 'the holder''s settle returns NULL');
select results_eq(format($$ select state::text, result from brooq.job where id = %s $$, :run),
    $$ values ('canceled'::text, null::jsonb) $$, 'and writes nothing: the job stays canceled');
select is_empty($$ select * from brooq.claim('w2', array['t.cancel.retry'], max_jobs => 100) $$, 'a canceled job is never claimed');

-- terminal jobs are left alone
select id as done from brooq.enqueue('t.cancel', '{"n": "done"}') \gset
select lease_token as done_tok from brooq.claim('w1', array['t.cancel']) \gset
select is(brooq.settle(:done, 'w1', :done_tok, 'done', result => '{"r": 1}'), 'done', 'a job is done');
select id as dead from brooq.enqueue('t.cancel', '{"n": "dead"}') \gset
select lease_token as dead_tok from brooq.claim('w1', array['t.cancel']) \gset
select is(brooq.settle(:dead, 'w1', :dead_tok, 'failed', error => 'fatal'), 'dead', 'a job is dead');
set local brooq.now = '2030-01-01 00:10:00+00';
select is(brooq.cancel(:done), false, 'cancel of a done job returns false');
select results_eq(format($$ select state::text, result, updated_at from brooq.job where id = %s $$, :done),
    $$ values ('done'::text, '{"r": 1}'::jsonb, timestamptz '2030-01-01 00:00:05+00') $$, 'the done job is unchanged');
select is(brooq.cancel(:dead), false, 'cancel of a dead job returns false');
select results_eq(format($$ select state::text, last_error from brooq.job where id = %s $$, :dead),
    $$ values ('dead'::text, 'fatal'::text) $$, 'the dead job is unchanged');
select is(brooq.cancel(-1), false, 'cancel of an unknown id returns false');
select throws_ok($$ select brooq.cancel(null) $$, '22004', 'brooq.cancel: job_id must not be NULL', 'a NULL id is 22004');

-- Privileges --------------------------------------------------------------------------

select id as priv from brooq.enqueue('t.cancel', '{"n": "privileges"}') \gset
set local role brooq_worker;
select throws_ok(format($$ select brooq.cancel(%s) $$, :priv), '42501', 'permission denied for function cancel',
    'brooq_worker cannot cancel');
reset role;
set local role brooq_producer;
select throws_ok(format($$ select brooq.cancel(%s) $$, :priv), '42501', 'permission denied for function cancel',
    'brooq_producer cannot cancel');
reset role;
select is((select state::text from brooq.job where id = :priv), 'pending', 'the refused cancels wrote nothing');
set local role brooq_admin;
select ok(brooq.cancel(:priv), 'brooq_admin can cancel');
reset role;

select * from finish();
rollback;
