-- Flow control in brooq.claim: max_in_flight (limit 1, a limit that
-- binds and one that does not, several topics, settle/reap/cancel freeing a slot,
-- the limit changed while jobs are in flight), rate per per (the sliding window,
-- its edge, a claim batch cut at the rate), and what brooq.topic_stats shows. The races and the isolation level
-- claim requires: tests/test_flow_races.py.
begin;
select plan(60);

set local brooq.now = '2030-01-01 00:00:00+00';

-- max_in_flight 1 ----------------------------------------------------------------------

select lives_ok($$ select brooq.declare_topic('t.one', max_in_flight => 1) $$, 'a topic with max_in_flight 1');
select lives_ok($$ select brooq.enqueue_many('t.one', array_fill('{}'::jsonb, array[5])) $$, 'five jobs');
select is((select count(*)::int from brooq.claim('w1', array['t.one'], 10)), 1,
    'a claim of 10 takes one job: the limit is 1');
select is_empty($$ select * from brooq.claim('w2', array['t.one'], 10) $$, 'a second claim takes none');
select is((select count(*)::int from brooq.job where topic = 't.one' and state = 'processing'), 1,
    'one job processing');
select results_eq($$ select ready, processing, max_in_flight, held_by_in_flight from brooq.topic_stats where topic = 't.one' $$,
    $$ values (4::bigint, 1::bigint, 1, 4::bigint) $$, 'topic_stats: the four ready jobs are held by max_in_flight');

-- settle frees the slot
select id as one_a, lease_token as one_a_tok from brooq.job where topic = 't.one' and state = 'processing' \gset
select is(brooq.settle(:one_a, 'w1', :one_a_tok, 'done')::text, 'done', 'the job is settled done');
select is((select count(*)::int from brooq.claim('w2', array['t.one'], 10)), 1, 'then one more may be claimed');

-- a settle to failed (a retry) frees it too; the retry waits for its turn like any job
select id as one_b, lease_token as one_b_tok from brooq.job where topic = 't.one' and state = 'processing' \gset
select is(brooq.settle(:one_b, 'w2', :one_b_tok, 'failed', error => 'x', delay => '0 seconds')::text, 'failed',
    'the job fails, to be retried now');
select is((select count(*)::int from brooq.claim('w2', array['t.one'], 10)), 1, 'one job is claimed again');
select is_empty($$ select * from brooq.claim('w3', array['t.one'], 10) $$, 'and the limit holds');

-- cancel frees the slot
select id as one_c from brooq.job where topic = 't.one' and state = 'processing' \gset
select ok(brooq.cancel(:one_c), 'the job in flight is canceled');
select is((select count(*)::int from brooq.claim('w3', array['t.one'], 10)), 1, 'a canceled job frees its slot');

-- an expired lease holds its slot until reap returns the job
select id as one_d from brooq.job where topic = 't.one' and state = 'processing' \gset
update brooq.job set locked_until = '2029-12-31 23:59:00+00' where id = :one_d;
select is_empty($$ select * from brooq.claim('w4', array['t.one'], 10) $$,
    'a job whose lease expired still counts: it is processing until reaped');
select is((select count(*)::int from brooq.reap() where id = :one_d), 1, 'reap returns it');
select is((select count(*)::int from brooq.claim('w4', array['t.one'], 10)), 1, 'then one job is claimed');
select is((select count(*)::int from brooq.job where topic = 't.one' and state = 'processing'), 1,
    'never more than one in flight');

-- a limit that does not bind, several topics, changing the limit --------------------------------

select lives_ok($$ select brooq.declare_topic('t.three', max_in_flight => 3) $$, 'a topic with max_in_flight 3');
select lives_ok($$ select brooq.declare_topic('t.free') $$, 'a topic without limits');
select lives_ok($$ select brooq.enqueue_many('t.three', array_fill('{}'::jsonb, array[10]), priority => 1) $$, 'ten jobs');
select lives_ok($$ select brooq.enqueue_many('t.free', array_fill('{}'::jsonb, array[10])) $$, 'ten jobs of t.free');
select is((select count(*)::int from brooq.claim('w5', array['t.three'], 2)), 2, 'a claim under the limit takes what it asks');
select results_eq($$ select topic, count(*)::int from brooq.claim('w5', array['t.three', 't.free'], 6) group by 1 order by 1 $$,
    $$ values ('t.free'::text, 5), ('t.three', 1) $$,
    'several topics: the limited one gives what its limit leaves (1), the other fills the claim');
select lives_ok($$ select brooq.declare_topic('t.three', max_in_flight => 1) $$, 'the limit lowered to 1 with 3 in flight');
select is((select count(*)::int from brooq.job where topic = 't.three' and state = 'processing'), 3,
    'the jobs in flight are not taken back');
select is_empty($$ select * from brooq.claim('w6', array['t.three'], 10) $$, 'no claim until they fall below it');
select results_eq($$ select held_by_in_flight from brooq.topic_stats where topic = 't.three' $$,
    $$ values (7::bigint) $$, 'topic_stats: all seven ready jobs held');
select lives_ok($$ select brooq.settle_many('w5',
        array(select id from brooq.job where topic = 't.three' and state = 'processing' order by id limit 2),
        array(select lease_token from brooq.job where topic = 't.three' and state = 'processing' order by id limit 2),
        array['done', 'done']) $$, 'two of the three settle');
select is_empty($$ select * from brooq.claim('w6', array['t.three'], 10) $$, 'one still in flight: the limit (1) is reached');
select lives_ok($$ select brooq.declare_topic('t.three', max_in_flight => 4) $$, 'the limit raised to 4');
select is((select count(*)::int from brooq.claim('w6', array['t.three'], 10)), 3, 'three more may be claimed');
select lives_ok($$ select brooq.declare_topic('t.three') $$, 'the limit removed');
select is((select count(*)::int from brooq.claim('w6', array['t.three'], 10)), 4, 'the rest is claimed');

-- a job that lost its lease (claim takes one such per call besides the others) stays within the cap
select lives_ok($$ select brooq.declare_topic('t.sus', max_in_flight => 2) $$, 'a topic with max_in_flight 2');
select lives_ok($$ select brooq.enqueue_many('t.sus', array_fill('{}'::jsonb, array[3])) $$, 'three jobs');
update brooq.job set lease_losses = 1 where id = (select max(id) from brooq.job where topic = 't.sus');
select results_eq($$ select topic, count(*)::int from brooq.claim('w9', array['t.sus', 't.free'], 10) group by 1 order by 1 $$,
    $$ values ('t.free'::text, 5), ('t.sus', 2) $$,
    'several topics: two of t.sus, the one that lost its lease included or not, never three');

-- rate per per: a sliding window -------------------------------------------------------------

select lives_ok($$ select brooq.declare_topic('t.rate', rate => 3, per => '1 minute') $$, 'a topic with rate 3 per minute');
select lives_ok($$ select brooq.enqueue_many('t.rate', array_fill('{}'::jsonb, array[20])) $$, 'twenty jobs');
select is((select count(*)::int from brooq.claim('w7', array['t.rate'], 2)), 2, 'a claim of 2 takes 2');
set local brooq.now = '2030-01-01 00:00:30+00';
select is((select count(*)::int from brooq.claim('w7', array['t.rate'], 10)), 1,
    'half a minute later, a claim of 10 takes the 1 left of the rate');
select results_eq($$ select ready, rate, per, held_by_rate from brooq.topic_stats where topic = 't.rate' $$,
    $$ values (17::bigint, 3, interval '1 minute', 17::bigint) $$, 'topic_stats: the ready jobs are held by the rate');
set local brooq.now = '2030-01-01 00:00:59.999+00';
select is_empty($$ select * from brooq.claim('w7', array['t.rate'], 10) $$, 'none before the first claims leave the window');
set local brooq.now = '2030-01-01 00:01:00+00';
select is((select count(*)::int from brooq.claim('w7', array['t.rate'], 10)), 2,
    'a minute after the first claim, its 2 jobs left the window: 2 more');
set local brooq.now = '2030-01-01 00:01:30+00';
select is((select count(*)::int from brooq.claim('w7', array['t.rate'], 10)), 1, 'then the one claimed at 00:00:30');
select is((select count(*)::int from brooq.claim_window where topic = 't.rate'), 2,
    'the window keeps only the claims of the last minute');
select is((select count(*)::int from brooq.claim('w7', array['t.rate'], 10)), 0, 'and the rate is used up again');

-- the latest claim outlives the window: a claim that empties the window and takes
-- nothing must not let a claim counted at an earlier instant (the clock stepped back)
-- miss the claims it would count
set local brooq.now = '2030-01-01 02:00:00+00';
select lives_ok($$ select brooq.declare_topic('t.back', rate => 2, per => '1 minute') $$, 'a topic with rate 2 per minute');
select lives_ok($$ select brooq.enqueue_many('t.back', array_fill('{}'::jsonb, array[2])) $$, 'two jobs');
select is((select count(*)::int from brooq.claim('w8', array['t.back'], 10)), 2, 'at 02:00:00, a claim takes both');
set local brooq.now = '2030-01-01 02:01:30+00';
select is_empty($$ select * from brooq.claim('w8', array['t.back'], 10) $$,
    'at 02:01:30, a claim finds nothing ready, its window empty');
select results_eq($$ select claimed_at, jobs from brooq.claim_window where topic = 't.back' $$,
    $$ values ('2030-01-01 02:00:00+00'::timestamptz, 2) $$,
    'the latest claim stays written, though out of the window');
set local brooq.now = '2030-01-01 02:00:40+00';
select lives_ok($$ select brooq.enqueue_many('t.back', array_fill('{}'::jsonb, array[2])) $$, 'two more jobs, ready at 02:00:40');
select is_empty($$ select * from brooq.claim('w8', array['t.back'], 10) $$,
    'a claim whose clock reads 02:00:40 counts from there: the 2 claimed at 02:00:00 fill the rate');
set local brooq.now = '2030-01-01 02:01:40+00';
select is((select count(*)::int from brooq.claim('w8', array['t.back'], 10)), 2,
    'at 02:01:40, a claim takes the two new jobs');

-- the flow lock: a row of brooq.flow_lock per topic ------------------------------------

select is((select count(*)::int from brooq.topic t where not exists (select from brooq.flow_lock l where l.topic = t.name)), 0,
    'declare_topic gave every topic its row of brooq.flow_lock');
select lives_ok($$ select brooq.declare_topic('t.back', rate => 3, per => '1 minute') $$, 'a topic declared again...');
select is((select count(*)::int from brooq.flow_lock where topic = 't.back'), 1, '...keeps its one row');
-- a topic row written by hand has no lock row: its first flow-limited claim adds it
insert into brooq.topic (name, created_at, updated_at, max_in_flight) values ('t.bare', now(), now(), 1);
select lives_ok($$ select brooq.enqueue_many('t.bare', array_fill('{}'::jsonb, array[3])) $$, 'three jobs of a topic without a lock row');
select is((select count(*)::int from brooq.claim('w9', array['t.bare', 't.one'], 10)), 1,
    'its claim takes what max_in_flight 1 allows');
select is((select count(*)::int from brooq.flow_lock where topic = 't.bare'), 1, 'and gave the topic its lock row');

select * from finish();
rollback;
