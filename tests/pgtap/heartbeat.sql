-- brooq.heartbeat: structure, behaviour (renews only the holder's leases, fenced
-- by lease_tokens, lost leases missing from the answer, errors), then privileges.
begin;
select plan(48);

-- Structure -------------------------------------------------------------------

select has_function('brooq', 'heartbeat', array['text', 'bigint[]', 'interval', 'bigint[]', 'jsonb[]']);
select function_returns('brooq', 'heartbeat', array['text', 'bigint[]', 'interval', 'bigint[]', 'jsonb[]'], 'setof bigint',
    'heartbeat returns the ids still held');
select is_definer('brooq', 'heartbeat', array['text', 'bigint[]', 'interval', 'bigint[]', 'jsonb[]']);

-- Behaviour -----------------------------------------------------------------------

set local brooq.now = '2030-01-01 00:00:00+00';
select lives_ok($$ select brooq.declare_topic('t.hb') $$, 'declare the topic');
select id as a from brooq.enqueue('t.hb', '{"n": "a"}', priority => 3) \gset
select id as b from brooq.enqueue('t.hb', '{"n": "b"}', priority => 2) \gset
select id as c from brooq.enqueue('t.hb', '{"n": "c"}', priority => 1) \gset
select id as p from brooq.enqueue('t.hb', '{"n": "pending"}', available_at => '2031-01-01 00:00:00+00') \gset
select lease_token as a_tok from brooq.claim('w1', array['t.hb'], lease => '30 seconds') \gset
select lease_token as b_tok from brooq.claim('w1', array['t.hb'], lease => '30 seconds') \gset
select lease_token as c_tok from brooq.claim('w2', array['t.hb'], lease => '30 seconds') \gset

set local brooq.now = '2030-01-01 00:00:10+00';
select set_eq(format($$ select * from brooq.heartbeat('w1', array[%s, %s, %s, %s], '2 minutes', array[%s, %s, %s, 0]) $$, :a, :b, :c, :p, :a_tok, :b_tok, :c_tok),
    array[:a::bigint, :b::bigint], 'heartbeat renews the worker''s own jobs; another worker''s and a pending job are absent');
select results_eq(format($$ select id, locked_until from brooq.job where id in (%s, %s, %s) order by id $$, :a, :b, :c),
    format($$ values (%s::bigint, timestamptz '2030-01-01 00:02:10+00'), (%s, timestamptz '2030-01-01 00:02:10+00'),
                     (%s, timestamptz '2030-01-01 00:00:30+00') $$, :a, :b, :c),
    'the holder''s leases now end at now + lease; the other worker''s lease is unchanged');
select results_eq(format($$ select state::text, attempts, lease_token, locked_by from brooq.job where id = %s $$, :a),
    format($$ values ('processing'::text, 1, %s::bigint, 'w1'::text) $$, :a_tok),
    'a heartbeat changes nothing but the lease deadline');
select is((select state::text from brooq.job where id = :p), 'pending', 'the pending job was not touched');
select results_eq(format($$ select * from brooq.heartbeat('w1', array[%s], '5 seconds', array[%s]) $$, :a, :a_tok), array[:a::bigint],
    'a heartbeat may also shorten a lease');
select is((select locked_until from brooq.job where id = :a), timestamptz '2030-01-01 00:00:15+00', 'to now + lease');
select is_empty($$ select * from brooq.heartbeat('w1', array[]::bigint[], '30 seconds', array[]::bigint[]) $$, 'no ids, no rows');
select is_empty($$ select * from brooq.heartbeat('w1', array[-1]::bigint[], '30 seconds', array[0]::bigint[]) $$, 'an unknown id is absent');

-- lease tokens
select set_eq(format($$ select * from brooq.heartbeat('w1', array[%s, %s], '1 minute', array[%s, %s]) $$, :a, :b, :a_tok, :b_tok),
    array[:a::bigint, :b::bigint], 'with the claim''s lease_tokens, both are renewed');
select set_eq(format($$ select * from brooq.heartbeat('w1', array[%s, %s], '1 minute', array[%s, %s]) $$, :a, :b, :a_tok, :b_tok::bigint # 1),
    array[:a::bigint], 'a job whose lease_token does not match is absent');
select set_eq(format($$ select * from brooq.heartbeat('w1', array[%s, %s], '1 minute', array[%s, null]) $$, :a, :b, :a_tok),
    array[:a::bigint], 'a NULL token element renews nothing: the worker''s name alone proves nothing');
select throws_ok(format($$ select brooq.heartbeat('w1', array[%s]) $$, :a), '22004',
    'brooq.heartbeat: worker, job_ids, lease and lease_tokens must not be NULL',
    'lease_tokens are required: a heartbeat without them is 22004');
select results_eq(format($$ select * from brooq.heartbeat('w1', array[%s], '2 hours', array[%s]) $$, :a, :a_tok),
    array[:a::bigint], 'a lease above the topic''s max_lease is renewed...');
select is((select locked_until from brooq.job where id = :a), timestamptz '2030-01-01 01:00:10+00',
    '...up to now + max_lease (1 hour by default)');

-- lost leases: canceled, settled, reaped (and claimed again)
select ok(brooq.cancel(:b), 'cancel b');
select set_eq(format($$ select * from brooq.heartbeat('w1', array[%s, %s], '1 minute', array[%s, %s]) $$, :a, :b, :a_tok, :b_tok),
    array[:a::bigint], 'a canceled job is absent from the answer');
select is((select state::text from brooq.job where id = :b), 'canceled', 'and stays canceled (no lease written back)');
set local brooq.now = '2030-01-01 00:05:00+00';
select is((select count(*)::int from brooq.reap() where id in (:a, :c)), 2, 'a and c expire and are reaped');
select is_empty(format($$ select * from brooq.heartbeat('w1', array[%s], '1 minute', array[%s]) $$, :a, :a_tok), 'a reaped job is absent');
select lease_token as a_tok2 from brooq.claim('w1', array['t.hb']) where id = :a \gset
select is_empty(format($$ select * from brooq.heartbeat('w1', array[%s], '1 minute', array[%s]) $$, :a, :a_tok),
    'the same worker, holding the job again under a new claim, cannot renew it with the old lease_token');
select results_eq(format($$ select * from brooq.heartbeat('w1', array[%s], '1 minute', array[%s]) $$, :a, :a_tok2),
    array[:a::bigint], 'the new claim''s token renews it');
-- progress rides along with the heartbeat
select results_eq(format($$ select * from brooq.heartbeat('w1', array[%s], '1 minute', array[%s],
                                                          array['{"fraction": 0.4, "message": "copying"}']::jsonb[]) $$,
                         :a, :a_tok2),
    array[:a::bigint], 'a heartbeat with progress renews the lease...');
select is((select progress from brooq.jobs where id = :a), '{"fraction": 0.4, "message": "copying"}'::jsonb,
    '...and stores the progress, shown by brooq.jobs');
select is((select progress from brooq.in_flight where id = :a), '{"fraction": 0.4, "message": "copying"}'::jsonb,
    'and by brooq.in_flight');
select results_eq(format($$ select * from brooq.heartbeat('w1', array[%s], '1 minute', array[%s], array[null]::jsonb[]) $$,
                         :a, :a_tok2), array[:a::bigint], 'a NULL progress element...');
select is((select progress->>'message' from brooq.job where id = :a), 'copying', '...keeps the job''s progress');
select throws_ok(format($$ select brooq.heartbeat('w1', array[%s], '1 minute', array[%s], array[null, null]::jsonb[]) $$,
                        :a, :a_tok2), '22023', 'progress has 2 elements, job_ids has 1', 'progress of another length is 22023');
select throws_ok(format($$ select brooq.heartbeat('w1', array[%s], '1 minute', array[%s], array[%L]::jsonb[]) $$,
                        :a, :a_tok2, jsonb_build_object('message', repeat('x', 5000))), '54000',
    'brooq.heartbeat: a progress over 4096 bytes', 'a progress over 4 kB is 54000');
select is(brooq.settle(:a, 'w1', :a_tok2, 'done'), 'done', 'a is settled');
select is_empty(format($$ select * from brooq.heartbeat('w1', array[%s], '1 minute', array[%s]) $$, :a, :a_tok2), 'a settled job is absent');

-- Errors --------------------------------------------------------------------------

select throws_ok($$ select brooq.heartbeat('w1', array[1]::bigint[], '0', array[1]::bigint[]) $$, '22023', 'invalid lease 00:00:00', 'a zero lease is 22023');
select throws_ok($$ select brooq.heartbeat('w1', array[1]::bigint[], '-1 second', array[1]::bigint[]) $$, '22023', 'invalid lease -00:00:01',
    'a negative lease is 22023');
select throws_ok($$ select brooq.heartbeat('w1', array[1, 2]::bigint[], '1 minute', array[1]::bigint[]) $$, '22023',
    'lease_tokens has 1 elements, job_ids has 2', 'lease_tokens of another length is 22023');
select throws_ok($$ select brooq.heartbeat('w1', array[[1, 2]]::bigint[], '1 minute', array[1, 2]::bigint[]) $$, '22023',
    'brooq.heartbeat: job_ids, lease_tokens and progress must be one-dimensional arrays', 'a two-dimensional job_ids is 22023');
select throws_ok($$ select brooq.heartbeat('w1', array[1, 2]::bigint[], '1 minute', array[[1], [2]]::bigint[]) $$, '22023',
    'brooq.heartbeat: job_ids, lease_tokens and progress must be one-dimensional arrays', 'two-dimensional lease_tokens is 22023');
select throws_ok($$ select brooq.heartbeat(null, array[1]::bigint[], '30 seconds', array[1]::bigint[]) $$, '22004',
    'brooq.heartbeat: worker, job_ids, lease and lease_tokens must not be NULL', 'a NULL worker is 22004');
select throws_ok($$ select brooq.heartbeat('w1', array[1]::bigint[], '-1 mon 31 days', array[1]::bigint[]) $$, '22023',
    'invalid lease -1 mons +31 days', 'a mixed-sign lease is 22023');
select throws_ok($$ select brooq.heartbeat('w1', array(select generate_series(1, 10001))::bigint[], '30 seconds',
                                           array(select generate_series(1, 10001))::bigint[]) $$, '54000',
    'brooq.heartbeat: 10001 job ids in one call, more than 10000', 'more than 10000 ids is 54000');
select throws_ok($$ select brooq.heartbeat('w1', null) $$, '22004', null, 'NULL job_ids is 22004');
select throws_ok($$ select brooq.heartbeat('w1', array[1]::bigint[], null) $$, '22004', null, 'a NULL lease is 22004');

-- Privileges --------------------------------------------------------------------------

select lease_token as c_tok2 from brooq.claim('w2', array['t.hb']) where id = :c \gset
select results_eq(format($$ select * from brooq.heartbeat('w2', array[%s], '300000 years', array[%s]) $$, :c, :c_tok2),
    array[:c::bigint], 'a lease of 300000 years...');
select is((select locked_until from brooq.job where id = :c), timestamptz '2030-01-01 01:05:00+00',
    '...is cut to the topic''s max_lease');
set local role brooq_producer;
select throws_ok(format($$ select brooq.heartbeat('w2', array[%s]) $$, :c), '42501', 'permission denied for function heartbeat',
    'brooq_producer cannot heartbeat');
reset role;
set local role brooq_worker;
select results_eq(format($$ select * from brooq.heartbeat('w2', array[%s], '1 minute', array[%s]) $$, :c, :c_tok2),
    array[:c::bigint], 'brooq_worker can heartbeat');
reset role;

select * from finish();
rollback;
