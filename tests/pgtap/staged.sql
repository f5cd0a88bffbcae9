-- brooq.enqueue_staged, decide_staged, forget_staged (a router's bulk enqueue, this
-- partition's share): structure, behaviour (staged jobs no claim reaches, publish,
-- fence, force, discard, tombstones, keys of another open call), errors, then
-- privileges under switched roles.
begin;
select plan(43);

select has_table('brooq', 'staged_call', 'brooq.staged_call exists');
select has_view('brooq', 'staged_calls', 'brooq.staged_calls exists');
select has_function('brooq', 'enqueue_staged',
    array['uuid', 'text', 'jsonb[]', 'text[]', 'timestamp with time zone', 'integer', 'interval', 'text[]', 'jsonb']);
select is_definer('brooq', 'decide_staged', array['uuid', 'text']);
select function_returns('brooq', 'forget_staged', array['interval', 'uuid[]'], 'integer');

set local brooq.now = '2030-01-01 00:00:00+00';
select brooq.declare_topic('t.staged');

-- staged: unclaimable, scheduled at the marker, the instant kept in the call's row
select results_eq($$ select created from brooq.enqueue_staged('00000000-0000-0000-0000-000000000001', 't.staged',
                        array['{"n": 1}', '{"n": 2}', '{"n": 3}']::jsonb[], array['k1', null, 'k1']) $$,
    array[true, true, false], 'enqueue_staged answers as enqueue_many, in input order');
select is((select count(*)::int from brooq.job where topic = 't.staged' and available_at = '9999-12-30 00:00:00+00'), 2,
    'the staged jobs wait at the marker');
select is((select state || ' ' || jobs || ' ' || available_at from brooq.staged_calls
            where call_id = '00000000-0000-0000-0000-000000000001'),
    'staged 2 2030-01-01 00:00:00+00', 'the call is staged with its two jobs and the instant they will be ready');
select is_empty($$ select * from brooq.claim('w', array['t.staged'], 10) $$, 'no claim takes a staged job');
select throws_ok($$ select brooq.enqueue_staged('00000000-0000-0000-0000-000000000001', 't.staged', array['{}']::jsonb[]) $$,
    '40001', 'bulk enqueue 00000000-0000-0000-0000-000000000001 is known here already: it was abandoned',
    'the same call id twice is refused');
select throws_ok($$ select brooq.enqueue_staged('00000000-0000-0000-0000-000000000002', 't.staged', array['{}']::jsonb[],
                        array['k1']) $$,
    '55P03', 'an idempotency key of this batch belongs to a job of a bulk enqueue not published yet',
    'a key held by a call not yet published is refused');
select is((select count(*)::int from brooq.staged_call where call_id = '00000000-0000-0000-0000-000000000002'), 0,
    'a refused share leaves nothing');
-- a producer on this partition meeting that key is told to retry, never answered with
-- a job whose call may still be discarded
select throws_ok($$ select brooq.enqueue('t.staged', '{}', 'k1') $$,
    '55P03', 'idempotency_key "k1" belongs to a job of a bulk enqueue not published yet',
    'enqueue of a key staged and not published: retry');
select throws_ok($$ select brooq.enqueue_many('t.staged', array['{}', '{}']::jsonb[], array['k2', 'k1']) $$,
    '55P03', 'an idempotency key of this batch belongs to a job of a bulk enqueue not published yet',
    'enqueue_many of a key staged and not published: retry');

-- publish: ready at the kept instant, once; then a repeat is harmless
select is(brooq.decide_staged('00000000-0000-0000-0000-000000000001', 'publish'), 'published', 'publish');
select is((select array_agg(available_at) from brooq.job where topic = 't.staged'),
    array['2030-01-01 00:00:00+00', '2030-01-01 00:00:00+00']::timestamptz[], 'the jobs are ready at their instant');
select is(brooq.decide_staged('00000000-0000-0000-0000-000000000001', 'publish'), 'published', 'publish again: no change');
select is(brooq.decide_staged('00000000-0000-0000-0000-000000000001', 'discard'), 'published',
    'a published call is never discarded');
select is((select count(*)::int from brooq.job where topic = 't.staged'), 2, 'its jobs stay');
select results_eq($$ select created from brooq.enqueue_staged('00000000-0000-0000-0000-000000000003', 't.staged',
                        array['{}']::jsonb[], array['k1']) $$,
    array[false], 'a key of a published call is met as on one node');
select results_eq($$ select id, created from brooq.enqueue('t.staged', '{}', 'k1') $$,
    $$ select id, false from brooq.job where topic = 't.staged' and idempotency_key = 'k1' $$,
    'enqueue of that key answers the published job');
select results_eq($$ select created from brooq.enqueue_many('t.staged', array['{}']::jsonb[], array['k1']) $$,
    array[false], 'and so does enqueue_many');

-- fence, then a plain publish is refused, a forced one goes through
select brooq.enqueue_staged('00000000-0000-0000-0000-000000000004', 't.staged', array['{"n": 4}']::jsonb[], delay => '1 minute');
select is(brooq.decide_staged('00000000-0000-0000-0000-000000000004', 'fence'), 'fenced', 'fence');
select is(brooq.decide_staged('00000000-0000-0000-0000-000000000004', 'publish'), 'fenced', 'a fenced call refuses publish');
select is(brooq.decide_staged('00000000-0000-0000-0000-000000000004', 'force'), 'published', 'force publishes a fenced call');
select is((select available_at from brooq.job where payload = '{"n": 4}'), '2030-01-01 00:01:00+00'::timestamptz,
    'now + delay, as staged');

-- discard: the jobs deleted, a canceled one kept; a fenced call too
select brooq.enqueue_staged('00000000-0000-0000-0000-000000000005', 't.staged', array['{"n": 5}', '{"n": 6}']::jsonb[]);
select brooq.cancel((select id from brooq.job where payload = '{"n": 6}'));
select is(brooq.decide_staged('00000000-0000-0000-0000-000000000005', 'discard'), 'discarded', 'discard');
select is((select array_agg(state::text) from brooq.job where payload in ('{"n": 5}', '{"n": 6}')), array['canceled'],
    'the staged job is deleted, the one canceled meanwhile stays canceled');
select is(brooq.decide_staged('00000000-0000-0000-0000-000000000005', 'force'), 'discarded', 'a discarded call is never published');

-- a call unknown here: fence and discard leave a tombstone, a late share is refused
select is(brooq.decide_staged('00000000-0000-0000-0000-000000000006', 'publish'), 'absent', 'publish of an unknown call: absent');
select is(brooq.decide_staged('00000000-0000-0000-0000-000000000006', 'fence'), 'discarded', 'fence of an unknown call: tombstone');
select throws_ok($$ select brooq.enqueue_staged('00000000-0000-0000-0000-000000000006', 't.staged', array['{}']::jsonb[]) $$,
    '40001', null, 'a share arriving after the tombstone is refused');

-- forget: decided rows older than keep, open calls and staged ones kept
select brooq.enqueue_staged('00000000-0000-0000-0000-000000000007', 't.staged', array['{}']::jsonb[]);
set local brooq.now = '2030-01-01 02:00:00+00';
select is(brooq.forget_staged('1 hour', array['00000000-0000-0000-0000-000000000001']::uuid[]), 3,
    'forget: the published and discarded calls (4, 5, the tombstone 6) but the open one named (1)');
select set_eq($$ select call_id::text from brooq.staged_call $$,
    array['00000000-0000-0000-0000-000000000001', '00000000-0000-0000-0000-000000000003', '00000000-0000-0000-0000-000000000007'],
    'the named call and the staged ones stay');

-- errors
select throws_ok($$ select brooq.decide_staged('00000000-0000-0000-0000-000000000007', 'maybe') $$, '22023',
    'unknown decision "maybe"', 'an unknown decision');
select throws_ok($$ select brooq.decide_staged(null, 'publish') $$, '22004', null, 'a NULL call id');
select throws_ok($$ select brooq.enqueue_staged(null, 't.staged', array['{}']::jsonb[]) $$, '22004', null, 'a NULL call id');
select throws_ok($$ select brooq.enqueue_staged(gen_random_uuid(), 'nope', array['{}']::jsonb[]) $$, '42704', null,
    'enqueue_many''s errors');
select throws_ok($$ select brooq.forget_staged('-1 hour') $$, '22023', 'invalid keep -01:00:00', 'a negative keep');

-- privileges: a producer stages and decides, only an admin reads and forgets
set local role brooq_producer;
select is(brooq.decide_staged(gen_random_uuid(), 'publish'), 'absent', 'a producer guessing a call id publishes nothing');
reset role;
select is((select state from brooq.staged_call where call_id = '00000000-0000-0000-0000-000000000007'), 'staged',
    'the staged call is untouched');
set local role brooq_producer;
select throws_ok($$ select * from brooq.staged_calls $$, '42501', null, 'a producer does not read the calls');
select throws_ok($$ select brooq.forget_staged('1 hour') $$, '42501', null, 'a producer does not forget calls');
reset role;

select * from finish();
rollback;
