-- brooq.retry and brooq.retry_dead: structure, behaviour (dead and canceled jobs
-- back to pending with their history kept; every other state left alone; a
-- re-driven job runs again with a fresh budget of attempts; bounds and errors),
-- then privileges under switched roles.
begin;
select plan(50);

-- Structure -------------------------------------------------------------------

select has_function('brooq', 'retry', array['bigint', 'boolean', 'boolean']);
select function_returns('brooq', 'retry', array['bigint', 'boolean', 'boolean'], 'boolean');
select is_definer('brooq', 'retry', array['bigint', 'boolean', 'boolean']);
select has_function('brooq', 'retry_dead', array['text', 'boolean', 'integer', 'timestamp with time zone', 'boolean', 'boolean']);
select function_returns('brooq', 'retry_dead', array['text', 'boolean', 'integer', 'timestamp with time zone', 'boolean', 'boolean'], 'integer');
select is_definer('brooq', 'retry_dead', array['text', 'boolean', 'integer', 'timestamp with time zone', 'boolean', 'boolean']);
select isnt_definer('brooq', '_retry', array['bigint[]', 'text[]', 'boolean', 'boolean']);

-- Behaviour: retry(job_id) -----------------------------------------------------------

set local brooq.now = '2030-01-01 00:00:00+00';
select lives_ok($$ select brooq.declare_topic('t.retry', max_attempts => 2, max_lease_losses => 2) $$, 'declare the topic');

-- a job that failed twice: dead
select id as dead from brooq.enqueue('t.retry', '{"n": "dead"}', idempotency_key => 'k-dead') \gset
select lease_token as tok from brooq.claim('w1', array['t.retry']) \gset
select is(brooq.settle(:dead, 'w1', :tok, 'preserve'), 'failed', 'a preserved attempt (attempts 0 again)');
set local brooq.now = '2030-01-01 00:01:00+00';
select lease_token as tok from brooq.claim('w1', array['t.retry']) \gset
select is(brooq.settle(:dead, 'w1', :tok, 'failed', error => 'first'), 'failed', 'first failure');
set local brooq.now = '2030-01-01 00:02:00+00';
select lease_token as tok from brooq.claim('w1', array['t.retry']) \gset
select is(brooq.settle(:dead, 'w1', :tok, 'failed', error => 'fatal'), 'dead', 'second failure: dead');
select lease_token as dead_tok from brooq.job where id = :dead \gset

set local brooq.now = '2030-01-01 01:00:00+00';
select ok(brooq.retry(:dead), 'retry of a dead job returns true');
select results_eq(format($$ select state::text, attempts, max_attempts, available_at, updated_at, lease_losses, last_error,
                                   idempotency_key, lease_token, locked_by from brooq.job where id = %s $$, :dead),
    format($$ values ('pending'::text, 2, 4, timestamptz '2030-01-01 01:00:00+00', timestamptz '2030-01-01 01:00:00+00', 0,
                      format('re-driven from dead by %%s at %%s; before: fatal', session_user::text collate "default", timestamptz '2030-01-01 01:00:00+00'),
                      'k-dead'::text, %s::bigint, null::text) $$, :dead_tok),
    'pending and ready now; attempts kept (2), max_attempts = 2 + the topic''s 2; the last error kept behind a note; key and token kept');
select is(brooq.retry(:dead), false, 'retrying it again returns false: it is pending');
select is((select id from brooq.enqueue('t.retry', '{}', idempotency_key => 'k-dead')), :dead::bigint,
    'its idempotency key still names it');

select lease_token as tok from brooq.claim('w1', array['t.retry']) \gset
select results_eq(format($$ select attempts, max_attempts, state::text from brooq.job where id = %s $$, :dead),
    $$ values (3, 4, 'processing'::text) $$, 'claimed again: attempt 3 of 4 (attempts still counts every claim)');
select is(brooq.settle(:dead, 'w1', :tok, 'failed', error => 'again'), 'failed', 'a failure on attempt 3 is not the last');
select is(brooq.retry(:dead), false, 'retry of a failed (waiting) job returns false');
set local brooq.now = '2030-01-01 02:00:00+00';
select lease_token as tok from brooq.claim('w1', array['t.retry']) \gset
select is(brooq.retry(:dead), false, 'retry of a processing job returns false');
select is(brooq.settle(:dead, 'w1', :tok, 'done', result => '{"ok": true}'), 'done', 'the re-driven job is done at last');
select is(brooq.retry(:dead), false, 'retry of a done job returns false: done is never left');
select results_eq(format($$ select state::text, result from brooq.job where id = %s $$, :dead),
    $$ values ('done'::text, '{"ok": true}'::jsonb) $$, 'the done job is unchanged');

-- canceled, a poison pill, unknown
select id as canc from brooq.enqueue('t.retry', '{"n": "canceled"}') \gset
select ok(brooq.cancel(:canc), 'a job is canceled');
select ok(brooq.retry(:canc), 'retry of a canceled job (named by its id) returns true');
select results_eq(format($$ select state::text, attempts, max_attempts, last_error from brooq.job where id = %s $$, :canc),
    $$ values ('pending'::text, 0, 2,
               format('re-driven from canceled by %s at %s; before: no error', session_user::text collate "default", timestamptz '2030-01-01 02:00:00+00')) $$,
    'the canceled job is pending, a fresh budget of 2 attempts');
select ok(brooq.cancel(:canc), 'cancel it again (the dashboard''s undo)');

select id as pill from brooq.enqueue('t.retry', '{"n": "pill"}') \gset
select lease_token as tok from brooq.claim('w1', array['t.retry'], lease => '1 second') \gset
set local brooq.now = '2030-01-01 02:00:02+00';
select is((select count(*)::int from brooq.reap()), 1, 'first lease loss');
select lease_token as tok from brooq.claim('w1', array['t.retry'], lease => '1 second') \gset
set local brooq.now = '2030-01-01 02:00:04+00';
select is((select count(*)::int from brooq.reap()), 1, 'second lease loss');
select is((select state::text from brooq.job where id = :pill), 'dead', 'a poison pill at max_lease_losses 2');
select ok(brooq.retry(:pill), 'retry of the poison pill');
select results_eq(format($$ select state::text, lease_losses, attempts, max_attempts from brooq.job where id = %s $$, :pill),
    $$ values ('pending'::text, 0, 2, 4) $$, 'its lease losses start from 0 again');
select is(brooq.retry(-1), false, 'retry of an unknown id returns false');
select throws_ok($$ select brooq.retry(null) $$, '22004', 'brooq.retry: job_id, rearm_children and clear_steps must not be NULL', 'a NULL id is 22004');

-- Behaviour: retry_dead(topic, ...) --------------------------------------------------

select lives_ok($$ select brooq.declare_topic('t.retry.many', max_attempts => 1) $$, 'declare a topic of one attempt');
set local brooq.now = '2030-01-02 00:00:00+00';
select is((select count(*)::int from brooq.enqueue_many('t.retry.many', array_fill('{}'::jsonb, array[6]))), 6, 'six jobs');
create temp table got on commit drop as select * from brooq.claim('w2', array['t.retry.many'], max_jobs => 6);
select is((select count(*)::int from brooq.settle_many('w2', array(select id from got order by id limit 3),
                                                       array(select lease_token from got order by id limit 3),
                                                       array['failed', 'failed', 'failed'])), 3, 'three jobs die at 00:00');
set local brooq.now = '2030-01-02 00:10:00+00';
select is((select count(*)::int from brooq.settle_many('w2', array(select id from got order by id offset 3 limit 2),
                                                       array(select lease_token from got order by id offset 3 limit 2),
                                                       array['failed', 'failed'])), 2, 'two die at 00:10');
select ok(brooq.cancel((select max(id) from got)), 'one is canceled');

select is(brooq.retry_dead('t.retry.many', max_jobs => 2), 2, 'max_jobs bounds one call');
select is((select array_agg(id order by id) from brooq.job where topic = 't.retry.many' and state = 'pending'),
          (select array_agg(id order by id) from (select id from got order by id limit 2) f), 'oldest dead first');
select is(brooq.retry_dead('t.retry.many', since => '2030-01-02 00:05:00+00'), 2, 'since: only jobs dead from then on');
select is((select count(*)::int from brooq.job where topic = 't.retry.many' and state = 'dead'), 1,
    'the one dead before since is left');
select is(brooq.retry_dead('t.retry.many'), 1, 'the rest of the dead');
select is(brooq.retry_dead('t.retry.many'), 0, 'nothing left: 0');
select is(brooq.retry_dead('t.retry.many', include_canceled => true), 1, 'include_canceled takes the canceled job too');
select throws_ok($$ select brooq.retry_dead('t.nope') $$, '42704', 'topic "t.nope" does not exist', 'an unknown topic is 42704');
select throws_ok($$ select brooq.retry_dead(null) $$, '22004',
    'brooq.retry_dead: topic, include_canceled, max_jobs, rearm_children and clear_steps must not be NULL', 'a NULL topic is 22004');
select throws_ok($$ select brooq.retry_dead('t.retry.many', max_jobs => 0) $$, '22023', 'invalid max_jobs 0', 'max_jobs 0 is 22023');

-- Privileges --------------------------------------------------------------------------

set local role brooq_worker;
select throws_ok(format($$ select brooq.retry(%s) $$, :canc), '42501', 'permission denied for function retry',
    'brooq_worker cannot retry');
reset role;
set local role brooq_producer;
select throws_ok($$ select brooq.retry_dead('t.retry') $$, '42501', 'permission denied for function retry_dead',
    'brooq_producer cannot retry_dead');
reset role;

select * from finish();
rollback;
