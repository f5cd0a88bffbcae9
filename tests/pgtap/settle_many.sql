-- brooq.settle_many: structure, behaviour (a mixed batch in one call, lost
-- leases skipped, array validation with nothing written), the outcome dead (at
-- once, fenced, retain_payload), then privileges.
begin;
select plan(61);

-- Structure -------------------------------------------------------------------

select has_function('brooq', 'settle_many',
    array['text', 'bigint[]', 'bigint[]', 'text[]', 'text[]', 'interval[]', 'jsonb[]']);
select function_returns('brooq', 'settle_many',
    array['text', 'bigint[]', 'bigint[]', 'text[]', 'text[]', 'interval[]', 'jsonb[]'], 'setof brooq.settled',
    'settle_many returns setof brooq.settled');
select is_definer('brooq', 'settle_many',
    array['text', 'bigint[]', 'bigint[]', 'text[]', 'text[]', 'interval[]', 'jsonb[]']);

-- Behaviour: a mixed batch -----------------------------------------------------------

set local brooq.now = '2030-01-01 00:00:00+00';
select lives_ok($$ select brooq.declare_topic('t.sm', max_attempts => 3, backoff_base => '10 seconds',
                                               backoff_max => '1 minute') $$, 'declare the topic');
select lives_ok($$ select brooq.declare_topic('t.sm.last', max_attempts => 1) $$, 'declare a one-attempt topic');

-- seven jobs: w1 holds six, w2 holds one
select lives_ok($$ select brooq.enqueue_many('t.sm', array['{"i": 1}', '{"i": 2}', '{"i": 3}', '{"i": 4}', '{"i": 5}', '{"i": 6}']::jsonb[]) $$,
    'six jobs');
create temp table held on commit drop as
select (row_number() over (order by id))::int as i, id, lease_token from brooq.claim('w1', array['t.sm'], max_jobs => 6);
select lives_ok($$ select brooq.enqueue('t.sm', '{"i": 7}') $$, 'a seventh job');
select id as other, lease_token as other_tok from brooq.claim('w2', array['t.sm']) \gset
select lives_ok($$ select brooq.enqueue('t.sm.last', '{"i": 8}') $$, 'a job on its last attempt');
insert into held select 8, id, lease_token from brooq.claim('w1', array['t.sm.last']);
select is((select count(*)::int from held), 7, 'w1 holds seven jobs');

set local brooq.now = '2030-01-01 00:00:02+00';
create temp table settled on commit drop as
select s.id, s.state::text as state
  from brooq.settle_many('w1',
           array[(select id from held where i = 1), (select id from held where i = 2), (select id from held where i = 3),
                 (select id from held where i = 4), (select id from held where i = 5), :other,
                 (select id from held where i = 8)],
           array[(select lease_token from held where i = 1), (select lease_token from held where i = 2),
                 (select lease_token from held where i = 3), (select lease_token from held where i = 4),
                 (select lease_token from held where i = 5), :other_tok, (select lease_token from held where i = 8)],
           array['done', 'failed', 'delay', 'preserve', 'cancel', 'done', 'failed'],
           array[null, 'e2', 'e3', 'e4', 'e5', null, 'e8'],
           array[null, null, '30 seconds', '5 seconds', null, null, null]::interval[],
           array['{"r": 1}', null, null, null, null, '{"r": "stolen"}', null]::jsonb[]) s;
select set_eq($$ select held.i, settled.state from settled join held using (id) $$,
    $$ values (1, 'done'), (2, 'failed'), (3, 'failed'), (4, 'failed'), (5, 'canceled'), (8, 'dead') $$,
    'one call settles every outcome and returns each job''s new state');
select is((select count(*)::int from settled where id = :other), 0, 'a job held by another worker is missing from the answer');
select results_eq(format($$ select state::text, locked_by, result from brooq.job where id = %s $$, :other),
    $$ values ('processing'::text, 'w2'::text, null::jsonb) $$, 'and untouched');
select results_eq(
    $$ select h.i, j.state::text, j.attempts, j.last_error, j.result, j.locked_by is null and j.locked_until is null
         from held h join brooq.job j using (id) where h.i <> 6 order by h.i $$,
    $$ values (1, 'done'::text, 1, null::text, '{"r": 1}'::jsonb, true),
              (2, 'failed', 1, 'e2', null, true),
              (3, 'failed', 1, 'e3', null, true),
              (4, 'failed', 0, 'e4', null, true),
              (5, 'canceled', 1, 'e5', null, true),
              (8, 'dead', 1, 'e8', null, true) $$,
    'each row gets its own outcome, error and result; preserve gives the attempt back; every lease is cleared');
select results_eq(
    $$ select h.i, j.available_at from held h join brooq.job j using (id) where h.i in (3, 4) order by h.i $$,
    $$ values (3, timestamptz '2030-01-01 00:00:32+00'), (4, timestamptz '2030-01-01 00:00:07+00') $$,
    'delays are per element');
select ok((select available_at between timestamptz '2030-01-01 00:00:07+00' and timestamptz '2030-01-01 00:00:12+00'
             from brooq.job where id = (select id from held where i = 2)),
    'failed takes the topic''s backoff');
select results_eq(format($$ select state::text, locked_by from brooq.job where id = (select id from held where i = 6) $$),
    $$ values ('processing'::text, 'w1'::text) $$, 'a held job left out of the batch is untouched');

select is_empty($$ select * from brooq.settle_many('w1', array(select id from held where i <= 5), array(select lease_token from held where i <= 5),
                                                    array['done', 'done', 'done', 'done', 'done']) $$,
    'repeating the batch settles nothing: every lease is gone');
select results_eq($$ select state::text from brooq.job where id = (select id from held where i = 2) $$, array['failed'],
    'the repeat did not turn a failed job into done');
select is_empty($$ select * from brooq.settle_many('w1', array[]::bigint[], array[]::bigint[], array[]::text[]) $$,
    'empty arrays settle nothing');
select results_eq(
    $$ select state::text from brooq.settle_many('w1', array[(select id from held where i = 6)],
                                                 array[(select lease_token from held where i = 6)], array['done'],
                                                 errors => null, delays => null, results => null) $$,
    array['done'], 'errors, delays and results may be NULL as a whole');

-- Errors, and nothing written ---------------------------------------------------------

select lives_ok($$ select brooq.enqueue_many('t.sm', array['{"i": 9}', '{"i": 10}']::jsonb[]) $$, 'two more jobs');
create temp table two on commit drop as
select (row_number() over (order by id))::int as i, id, lease_token from brooq.claim('w1', array['t.sm'], max_jobs => 2);
select id as a, lease_token as a_tok from two where i = 1 \gset
select id as b, lease_token as b_tok from two where i = 2 \gset

select throws_ok(format($$ select brooq.settle_many('w1', array[%s, %s], array[%s, %s], array['done', 'bogus']) $$, :a, :b, :a_tok, :b_tok),
    '22023', format('unknown outcome "bogus" for job %s', :b), 'an unknown outcome in element 2 is 22023');
select throws_ok(format($$ select brooq.settle_many('w1', array[%s, %s], array[%s, %s], array['done', 'delay']) $$, :a, :b, :a_tok, :b_tok),
    '22023', format('invalid delay NULL for job %s', :b), 'delay without a delay is 22023');
select throws_ok(format($$ select brooq.settle_many('w1', array[%s, %s], array[%s, %s], array['done', 'delay'], delays => array[null, '-1 second']::interval[]) $$,
                        :a, :b, :a_tok, :b_tok),
    '22023', format('invalid delay -00:00:01 for job %s', :b), 'a negative delay is 22023');
select throws_ok(format($$ select brooq.settle_many('w1', array[%s, %s], array[%s, %s], array['done', 'done']) $$, :a, :a, :a_tok, :a_tok),
    '22023', format('job %s appears 2 times in one settle_many call', :a), 'a duplicate id is 22023');
select throws_ok(format($$ select brooq.settle_many('w1', array[%s, %s], array[%s], array['done', 'done']) $$, :a, :b, :a_tok),
    '22023', 'brooq.settle_many: arrays of different lengths (2 job ids)', 'lease_tokens of another length is 22023');
select throws_ok(format($$ select brooq.settle_many('w1', array[%s, %s], array[%s, %s], array['done']) $$, :a, :b, :a_tok, :b_tok),
    '22023', null, 'outcomes of another length is 22023');
select throws_ok(format($$ select brooq.settle_many('w1', array[%s, %s], array[%s, %s], array['done', 'done'], array['x']) $$, :a, :b, :a_tok, :b_tok),
    '22023', null, 'errors of another length is 22023');
select throws_ok(format($$ select brooq.settle_many('w1', array[%s, %s], array[%s, %s], array['done', 'done'], delays => array['1 second']::interval[]) $$,
                        :a, :b, :a_tok, :b_tok),
    '22023', null, 'delays of another length is 22023');
select throws_ok(format($$ select brooq.settle_many('w1', array[%s, %s], array[%s, %s], array['done', 'done'], results => array['{}', '{}', '{}']::jsonb[]) $$,
                        :a, :b, :a_tok, :b_tok),
    '22023', null, 'results of another length is 22023');
select throws_ok(format($$ select brooq.settle_many('w1', array[[%s, %s]], array[%s, %s], array['done', 'done']) $$, :a, :b, :a_tok, :b_tok),
    '22023', 'brooq.settle_many: job_ids, lease_tokens, outcomes, errors, delays and results must be one-dimensional arrays',
    'a two-dimensional job_ids is 22023');
select throws_ok(format($$ select brooq.settle_many('w1', array[%s, %s], array[%s, %s], array['done', 'done'],
                                                    results => array[['{}'], ['{}']]::jsonb[]) $$, :a, :b, :a_tok, :b_tok),
    '22023', 'brooq.settle_many: job_ids, lease_tokens, outcomes, errors, delays and results must be one-dimensional arrays',
    'two-dimensional results are 22023');
select throws_ok(format($$ select brooq.settle_many('w1', array[%s, null], array[%s, %s], array['done', 'done']) $$, :a, :a_tok, :b_tok),
    '22004', 'brooq.settle_many: element 2 has a NULL job id, lease token or outcome', 'a NULL id element is 22004, naming it');
select throws_ok(format($$ select brooq.settle_many('w1', array[%s, %s], array[%s, null], array['done', 'done']) $$, :a, :b, :a_tok),
    '22004', 'brooq.settle_many: element 2 has a NULL job id, lease token or outcome', 'a NULL lease_token element is 22004');
select throws_ok(format($$ select brooq.settle_many('w1', array[%s, %s], array[%s, %s], array[null, 'done']) $$, :a, :b, :a_tok, :b_tok),
    '22004', 'brooq.settle_many: element 1 has a NULL job id, lease token or outcome', 'a NULL outcome element is 22004');
select throws_ok(format($$ select brooq.settle_many(null, array[%s], array[%s], array['done']) $$, :a, :a_tok),
    '22004', 'brooq.settle_many: worker, job_ids, lease_tokens and outcomes must not be NULL', 'a NULL worker is 22004');
select throws_ok($$ select brooq.settle_many('w1', null, array[1]::bigint[], array['done']) $$, '22004', null, 'NULL job_ids is 22004');
select throws_ok($$ select brooq.settle_many('w1', array[1]::bigint[], null, array['done']) $$, '22004', null, 'NULL lease_tokens is 22004');
select throws_ok($$ select brooq.settle_many('w1', array[1]::bigint[], array[1]::bigint[], null) $$, '22004', null, 'NULL outcomes is 22004');
select throws_ok(format($$ select brooq.settle_many('w1', array[%s, %s], array[%s, %s], array['done', 'dead']) $$, :a, :b, :a_tok, :b_tok),
    '22023', format('outcome dead without an error for job %s', :b), 'dead without an error is 22023');
select throws_ok(format($$ select brooq.settle_many('w1', array[%s, %s], array[%s, %s], array['dead', 'done'], array[' ', null]) $$, :a, :b, :a_tok, :b_tok),
    '22023', format('outcome dead without an error for job %s', :a), 'dead with a blank error is 22023');
select throws_ok(format($$ select brooq.settle_many('w1', array[%s], array[%s], array['Dead'], array['e']) $$, :a, :a_tok),
    '22023', format('unknown outcome "Dead" for job %s', :a), 'an unknown outcome is still 22023 (outcomes are lowercase)');
select results_eq($$ select state::text, locked_by from brooq.job where id in (select id from two) $$,
    $$ values ('processing'::text, 'w1'::text), ('processing'::text, 'w1'::text) $$,
    'no rejected batch wrote anything, not even its valid first element');

-- dead: at once, whatever attempts are left -------------------------------------------

select lives_ok($$ select brooq.declare_topic('t.sm.dead', max_attempts => 5, backoff_base => '10 seconds') $$,
    'declare a five-attempt topic');
select lives_ok($$ select brooq.enqueue_many('t.sm.dead', array['{"x": 1}', '{"x": 2}', '{"x": 3}']::jsonb[]) $$, 'three jobs');
create temp table dj on commit drop as
select (row_number() over (order by id))::int as i, id, lease_token
  from brooq.claim('w1', array['t.sm.dead'], max_jobs => 3);
select id as x1, lease_token as x1_tok from dj where i = 1 \gset
select id as x2, lease_token as x2_tok from dj where i = 2 \gset
select id as x3, lease_token as x3_tok from dj where i = 3 \gset
select available_at as x1_at from brooq.job where id = :x1 \gset
update brooq.job set lease_losses = 2 where id = :x1;  -- as if reaped twice before this claim
set local brooq.now = '2030-01-01 00:01:00+00';
select results_eq(format($$ select state::text from brooq.settle_many('w1', array[%s], array[%s], array['dead'],
                                                  array['payload does not fit Order: id: missing']) $$, :x1, :x1_tok),
    array['dead'], 'dead on attempt 1 of 5 returns dead');
select results_eq(format($$ select state::text, attempts, max_attempts, last_error, lease_losses, payload, available_at,
                                   locked_by is null and locked_until is null, updated_at
                              from brooq.job where id = %s $$, :x1),
    format($$ values ('dead'::text, 1, 5, 'payload does not fit Order: id: missing'::text, 0, '{"x": 1}'::jsonb,
                      %L::timestamptz, true, timestamptz '2030-01-01 00:01:00+00') $$, :'x1_at'),
    'dead at once: attempts as claim charged them, the error recorded, lease_losses reset, the lease cleared, the payload kept (retain_payload)');
select is_empty(format($$ select * from brooq.settle_many('w1', array[%s], array[%s], array['dead'], array['e']) $$, :x2, :x2_tok::bigint + 1000),
    'dead with a foreign lease_token settles nothing');
select is_empty(format($$ select * from brooq.settle_many('w2', array[%s], array[%s], array['dead'], array['e']) $$, :x2, :x2_tok),
    'dead from another worker settles nothing');
select results_eq(format($$ select state::text, locked_by, last_error from brooq.job where id = %s $$, :x2),
    $$ values ('processing'::text, 'w1'::text, null::text) $$, 'and writes nothing');
select results_eq(format($$ select state::text from brooq.settle_many('w1', array[%s], array[%s], array['done']) $$, :x3, :x3_tok),
    array['done'], 'a job settles done');
select is_empty(format($$ select * from brooq.settle_many('w1', array[%s], array[%s], array['dead'], array['late']) $$, :x3, :x3_tok),
    'dead after done settles nothing');
select results_eq(format($$ select state::text, last_error from brooq.job where id = %s $$, :x3),
    $$ values ('done'::text, null::text) $$, 'a terminal job is not overwritten by dead');
select is_empty(format($$ select * from brooq.settle_many('w1', array[%s], array[%s], array['dead'], array['again']) $$, :x1, :x1_tok),
    'a repeat of dead settles nothing');
select is((select last_error from brooq.job where id = :x1), 'payload does not fit Order: id: missing', 'and keeps the first error');

-- retain_payload => false (with retain_done => false: the other form of the statement)
select lives_ok($$ select brooq.declare_topic('t.sm.dead.drop', max_attempts => 5, retain_done => false,
                                               retain_payload => false) $$, 'declare a topic that keeps no payload');
select lives_ok($$ select brooq.enqueue('t.sm.dead.drop', '{"secret": 1}') $$, 'a job');
select id as y1, lease_token as y1_tok from brooq.claim('w1', array['t.sm.dead.drop']) \gset
select results_eq(format($$ select state::text from brooq.settle_many('w1', array[%s], array[%s], array['dead'], array['no fit']) $$, :y1, :y1_tok),
    array['dead'], 'dead in a topic with retain_done => false');
select results_eq(format($$ select state::text, attempts, last_error, payload from brooq.job where id = %s $$, :y1),
    $$ values ('dead'::text, 1, 'no fit'::text, 'null'::jsonb) $$, 'the dead job is kept, its payload cleared (retain_payload => false)');

-- Privileges ---------------------------------------------------------------------------

set local role brooq_producer;
select throws_ok(format($$ select brooq.settle_many('w1', array[%s], array[%s], array['done']) $$, :a, :a_tok), '42501',
    'permission denied for function settle_many', 'brooq_producer cannot settle');
reset role;
set local role brooq_worker;
select results_eq(format($$ select state::text from brooq.settle_many('w1', array[%s, %s], array[%s, %s], array['done', 'cancel']) order by 1 $$,
                         :a, :b, :a_tok, :b_tok),
    $$ values ('canceled'::text), ('done'::text) $$, 'brooq_worker can settle a batch');
reset role;

select * from finish();
rollback;
