-- brooq.purge and brooq.purge_all: structure, behaviour (only terminal rows
-- older than their topic's retention, retention 0 keeps forever, active jobs
-- never deleted, batch_size and oldest first, freed idempotency keys), then
-- privileges under switched roles. purge_all commits, so it cannot run inside
-- this transaction: only its existence, refusal and privileges are tested here.
begin;
select plan(49);

-- Structure -------------------------------------------------------------------

select has_function('brooq', 'purge', array['integer']);
select function_returns('brooq', 'purge', array['integer'], 'bigint', 'purge returns how many jobs it deleted');
select is_definer('brooq', 'purge', array['integer']);
select has_function('brooq', 'purge_all', array['integer', 'integer']);
select is_procedure('brooq', 'purge_all', array['integer', 'integer'], 'purge_all is a procedure (it commits each batch)');
select isnt_definer('brooq', 'purge_all', array['integer', 'integer'],
    'purge_all is not SECURITY DEFINER (a committing procedure cannot be)');

-- Behaviour: batch_size, oldest first ---------------------------------------------------

set local brooq.now = '2030-01-01 00:00:00+00';
select lives_ok($$ select brooq.declare_topic('t.purge.batch', retention => '1 hour') $$, 'declare a topic kept 1 hour');
select lives_ok($$ select brooq.enqueue_many('t.purge.batch', array['{"n": 1}', '{"n": 2}', '{"n": 3}', '{"n": 4}', '{"n": 5}']::jsonb[]) $$,
    'five jobs');
-- cancel them one minute apart, so they became terminal at five different instants
set local brooq.now = '2030-01-01 00:01:00+00';
select ok(brooq.cancel((select id from brooq.job where topic = 't.purge.batch' and payload = '{"n": 3}')), 'cancel job 3 at 00:01');
set local brooq.now = '2030-01-01 00:02:00+00';
select ok(brooq.cancel((select id from brooq.job where topic = 't.purge.batch' and payload = '{"n": 1}')), 'cancel job 1 at 00:02');
set local brooq.now = '2030-01-01 00:03:00+00';
select ok(brooq.cancel((select id from brooq.job where topic = 't.purge.batch' and payload = '{"n": 5}')), 'cancel job 5 at 00:03');
set local brooq.now = '2030-01-01 00:04:00+00';
select ok(brooq.cancel((select id from brooq.job where topic = 't.purge.batch' and payload = '{"n": 2}')), 'cancel job 2 at 00:04');
set local brooq.now = '2030-01-01 00:05:00+00';
select ok(brooq.cancel((select id from brooq.job where topic = 't.purge.batch' and payload = '{"n": 4}')), 'cancel job 4 at 00:05');

set local brooq.now = '2030-01-01 01:02:30+00';
select is(brooq.purge(), 2::bigint, 'only the jobs terminal for longer than the retention are deleted');
select set_eq($$ select payload ->> 'n' from brooq.job where topic = 't.purge.batch' $$, array['5', '2', '4'],
    'the jobs terminal since 00:01 and 00:02 are gone, the others kept');
set local brooq.now = '2030-01-01 02:00:00+00';
select is(brooq.purge(batch_size => 2), 2::bigint, 'batch_size bounds a purge');
select set_eq($$ select payload ->> 'n' from brooq.job where topic = 't.purge.batch' $$, array['4'],
    'oldest first: the two oldest of the three went');
select is(brooq.purge(batch_size => 2), 1::bigint, 'a short batch: nothing more is due');
select is(brooq.purge(batch_size => 2), 0::bigint, 'then zero');

-- Behaviour: retention per topic, active jobs never deleted ------------------------------------

set local brooq.now = '2030-01-01 00:00:00+00';
select lives_ok($$ select brooq.declare_topic('t.purge.day', retention => '1 day', max_attempts => 1) $$, 'a topic kept 1 day');
select lives_ok($$ select brooq.declare_topic('t.purge.week', retention => '7 days') $$, 'a topic kept 7 days');
select lives_ok($$ select brooq.declare_topic('t.purge.forever', retention => '0') $$, 'a topic kept forever');

select id as done from brooq.enqueue('t.purge.day', '{"n": "done"}', idempotency_key => 'k-done', priority => 5) \gset
select lease_token as done_tok from brooq.claim('w1', array['t.purge.day']) \gset
select is(brooq.settle(:done, 'w1', :done_tok, 'done'), 'done', 'a done job');
select id as dead from brooq.enqueue('t.purge.day', '{"n": "dead"}', priority => 4) \gset
select lease_token as dead_tok from brooq.claim('w1', array['t.purge.day']) \gset
select is(brooq.settle(:dead, 'w1', :dead_tok, 'failed'), 'dead', 'a dead job');
select id as can from brooq.enqueue('t.purge.day', '{"n": "canceled"}') \gset
select ok(brooq.cancel(:can), 'a canceled job');
select id as pend from brooq.enqueue('t.purge.day', '{"n": "pending"}', available_at => '2040-01-01 00:00:00+00') \gset
select lives_ok($$ select brooq.declare_topic('t.purge.day', retention => '1 day', max_attempts => 5) $$,
    'give the topic retries for the next job');
select id as fail from brooq.enqueue('t.purge.day', '{"n": "failed"}', priority => 3) \gset
select lease_token as fail_tok from brooq.claim('w1', array['t.purge.day']) \gset
select is(brooq.settle(:fail, 'w1', :fail_tok, 'delay', delay => '1 minute'), 'failed', 'a failed (waiting) job');
select id as proc from brooq.enqueue('t.purge.day', '{"n": "processing"}', priority => 9) \gset
select lease_token as proc_tok from brooq.claim('w1', array['t.purge.day'], lease => '1 second') \gset
select id as week from brooq.enqueue('t.purge.week', '{"n": "week"}') \gset
select ok(brooq.cancel(:week), 'a canceled job kept 7 days');
select id as forever from brooq.enqueue('t.purge.forever', '{"n": "forever"}') \gset
select ok(brooq.cancel(:forever), 'a canceled job kept forever');
set local brooq.now = '2030-01-02 12:00:00+00';
select id as recent from brooq.enqueue('t.purge.day', '{"n": "recent"}') \gset
select ok(brooq.cancel(:recent), 'a job canceled 1.5 days later');

select results_eq($$ select id, created from brooq.enqueue('t.purge.day', idempotency_key => 'k-done') $$,
    format($$ values (%s::bigint, false) $$, :done), 'before the purge, the done job holds its key');

set local brooq.now = '2030-01-03 00:00:00+00';
select is(brooq.purge(), 3::bigint, 'two days on, the done, dead and canceled jobs of the 1-day topic are deleted');
select set_eq(format($$ select id from brooq.job where id in (%s, %s, %s, %s, %s, %s, %s, %s, %s) $$,
                     :done, :dead, :can, :pend, :fail, :proc, :week, :forever, :recent),
    array[:pend::bigint, :fail::bigint, :proc::bigint, :week::bigint, :forever::bigint, :recent::bigint],
    'active jobs, a younger terminal job, a 7-day and a keep-forever topic''s jobs remain');
select results_eq($$ select created from brooq.enqueue('t.purge.day', '{"n": "reborn"}', idempotency_key => 'k-done') $$,
    array[true], 'a purged job''s idempotency key is free again: a new job is created');
select isnt((select id from brooq.job where topic = 't.purge.day' and idempotency_key = 'k-done'), :done::bigint,
    'under a new id');

set local brooq.now = '2040-01-01 00:00:00+00';
select is(brooq.purge(), 2::bigint, 'ten years on, the younger terminal job and the 7-day topic''s job are deleted');
select set_eq(format($$ select state::text from brooq.job where id in (%s, %s, %s, %s) $$, :pend, :fail, :proc, :forever),
    array['pending', 'failed', 'processing', 'canceled'],
    'pending, failed and processing jobs are never deleted however old; retention 0 keeps forever');

-- Errors ---------------------------------------------------------------------------------

select throws_ok($$ select brooq.purge(0) $$, '22023', 'invalid batch_size 0', 'batch_size 0 is 22023');
select throws_ok($$ select brooq.purge(100001) $$, '22023', 'invalid batch_size 100001', 'batch_size over 100000 is 22023');
select throws_ok($$ select brooq.purge(null) $$, '22004', 'brooq.purge: batch_size must not be NULL', 'a NULL batch_size is 22004');
select throws_ok($$ call brooq.purge_all(max_batches => 0) $$, '22023', 'invalid max_batches 0', 'purge_all: max_batches 0 is 22023');
select throws_ok($$ call brooq.purge_all() $$, '2D000', 'invalid transaction termination',
    'purge_all refuses to run inside a transaction block (it commits)');

-- Privileges -------------------------------------------------------------------------------

select function_privs_are('brooq', 'purge_all', array['integer', 'integer'], 'brooq_admin', array['EXECUTE'],
    'brooq_admin can call purge_all');
select function_privs_are('brooq', 'purge_all', array['integer', 'integer'], 'brooq_worker', array[]::text[],
    'brooq_worker cannot call purge_all');
select function_privs_are('brooq', 'purge_all', array['integer', 'integer'], 'brooq_producer', array[]::text[],
    'brooq_producer cannot call purge_all');
set local role brooq_worker;
select throws_ok($$ select brooq.purge() $$, '42501', 'permission denied for function purge', 'brooq_worker cannot purge');
select throws_ok($$ call brooq.purge_all() $$, '42501', 'permission denied for procedure purge_all',
    'brooq_worker cannot call purge_all');
reset role;
set local role brooq_producer;
select throws_ok($$ select brooq.purge() $$, '42501', 'permission denied for function purge', 'brooq_producer cannot purge');
reset role;
set local role brooq_admin;
select is(brooq.purge(), 0::bigint, 'brooq_admin can purge');
reset role;

select * from finish();
rollback;
