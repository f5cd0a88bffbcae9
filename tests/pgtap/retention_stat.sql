-- brooq.retention_stat, brooq.retention_stats and brooq.purge_remainder: purge
-- counts the jobs it deletes per topic; purge_all's remainder helper names the
-- topics with jobs still due and counts them; purge_all is bounded by default.
begin;
select plan(15);

select has_table('brooq', 'retention_stat', 'brooq.retention_stat exists');
select has_view('brooq', 'retention_stats', 'brooq.retention_stats exists');
select columns_are('brooq', 'retention_stats', array['topic', 'retention', 'deleted', 'remainders', 'last_purge_at']);
select is((select pg_get_function_arguments('brooq.purge_all(integer, integer)'::regprocedure)),
    'IN batch_size integer DEFAULT 1000, IN max_batches integer DEFAULT 100',
    'purge_all is bounded by default: 100 batches (what the pg_cron job brooq_purge runs)');

set local brooq.now = '2030-01-01 00:00:00+00';
select lives_ok($$ select brooq.declare_topic('t.rs.a', retention => '1 day'),
                          brooq.declare_topic('t.rs.b', retention => '1 day'),
                          brooq.declare_topic('t.rs.keep', retention => '0') $$, 'three topics');
select results_eq($$ select topic, deleted, remainders, last_purge_at from brooq.retention_stats
                      where topic like 't.rs.%' order by topic $$,
    $$ values ('t.rs.a'::text, 0::bigint, 0::bigint, null::timestamptz), ('t.rs.b', 0, 0, null), ('t.rs.keep', 0, 0, null) $$,
    'every declared topic has a row, at zero before the first purge');

-- 5 terminal jobs in a, 3 in b, 2 in keep (retention 0: kept forever)
insert into brooq.job (topic, payload, state, max_attempts, available_at, created_at, updated_at)
select t, '{}', 'done', 5, now(), now(), timestamptz '2029-12-01 00:00:00+00'
  from unnest(array['t.rs.a', 't.rs.a', 't.rs.a', 't.rs.a', 't.rs.a', 't.rs.b', 't.rs.b', 't.rs.b',
                    't.rs.keep', 't.rs.keep']) as t;

select is(brooq.purge_remainder(), array['t.rs.a', 't.rs.b'], 'purge_remainder names the topics with jobs due');
select is(brooq.purge(batch_size => 6), 6::bigint, 'a batch of 6');
select results_eq($$ select topic, deleted, remainders, last_purge_at from brooq.retention_stats
                      where topic like 't.rs.%' order by topic $$,
    $$ values ('t.rs.a'::text, 5::bigint, 1::bigint, timestamptz '2030-01-01 00:00:00+00'),
              ('t.rs.b', 1, 1, timestamptz '2030-01-01 00:00:00+00'), ('t.rs.keep', 0, 0, null) $$,
    'purge counted what it deleted per topic (5 of a, 1 of b); the remainder was counted once per topic');
select is(brooq.purge_remainder(), array['t.rs.b'], 'then only b has jobs due');
select is(brooq.purge(), 2::bigint, 'the rest of b');
select is(brooq.purge_remainder(), '{}'::text[], 'nothing due: an empty array');
select results_eq($$ select topic, deleted, remainders from brooq.retention_stats where topic like 't.rs.%' order by topic $$,
    $$ values ('t.rs.a'::text, 5::bigint, 1::bigint), ('t.rs.b', 3, 2), ('t.rs.keep', 0, 0) $$,
    'deleted and remainders only grow');

-- privileges: the worker reads the view (its metrics), not the table; the producer neither
set local role brooq_worker;
select lives_ok($$ select * from brooq.retention_stats $$, 'worker: read retention_stats');
select throws_ok($$ select * from brooq.retention_stat $$, '42501', 'permission denied for table retention_stat',
    'worker: not the table');
reset role;

select * from finish();
rollback;
