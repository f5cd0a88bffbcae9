-- brooq.watch / brooq.unwatch: a watch id is random, so nobody removes a watch whose
-- id they were not given (two producers, ids next to theirs and small ids tried);
-- stale watches go at most 100 per watch, found through job_watch_since_idx. The
-- NOTIFY a watch brings: tests/test_wait.py.
begin;
select plan(15);

select has_index('brooq', 'job_watch', 'job_watch_since_idx', array['since'], 'stale watches are found by an index');
select col_has_check('brooq', 'job_watch', 'id', 'a watch id is checked (positive)');

set local brooq.now = '2030-01-01 00:00:00+00';
select lives_ok($$ select brooq.declare_topic('t.watch') $$, 'declare a topic');
select id as j from brooq.enqueue('t.watch', '{}') \gset

-- two producers watch the same job; each knows only its own id
set local role brooq_producer;
select brooq.watch(:j) as mine \gset
select brooq.watch(:j) as theirs \gset
reset role;
select cmp_ok(:mine::bigint, '>', 0::bigint, 'a watch id is positive');
select cmp_ok(abs(:theirs::numeric - :mine::numeric), '>', 1000000::numeric,
    'two watches made one after the other have ids far apart');

-- the holder of `theirs` guesses: small ids, and the ids around its own
set local role brooq_producer;
create temp table tried on commit drop as
select count(*) filter (where brooq.unwatch(i)) as removed
  from (select generate_series(1, 10000)::bigint as i
        union select :theirs::bigint + d from generate_series(-1000, 1000) as d where :theirs::bigint + d > 0) as ids
 where i <> :theirs::bigint;
reset role;
select is((select removed from tried), 0::bigint,
    'unwatch of the ids 1 to 10000 and of the 2000 ids around one''s own removes nothing of another''s');
select is((select count(*)::int from brooq.job_watch where id in (:mine, :theirs)), 2, 'both watches are there');

set local role brooq_producer;
select ok(brooq.unwatch(:theirs), 'whoever holds the id removes its watch');
select ok(not brooq.unwatch(:theirs), 'once: false when it is already gone');
reset role;
select is((select count(*)::int from brooq.job_watch where id = :mine), 1, 'the other watch stays');

-- stale watches: more than a day old, at most 100 go per watch
insert into brooq.job_watch (id, job_id, since)
select 1000 + i, :j, '2029-12-30 00:00:00+00' from generate_series(1, 150) as i;
set local brooq.now = '2030-01-01 12:00:00+00';
select lives_ok(format($$ select brooq.watch(%s) $$, :j), 'a watch...');
select is((select count(*)::int from brooq.job_watch where job_id = :j and since < '2029-12-31 12:00:00+00'), 50,
    '...drops 100 watches more than a day old, no more');
select lives_ok(format($$ select brooq.watch(%s) $$, :j), 'the next watch...');
select is((select count(*)::int from brooq.job_watch where job_id = :j and since < '2029-12-31 12:00:00+00'), 0, '...drops the rest');
select is((select count(*)::int from brooq.job_watch where job_id = :j), 3, 'the first producer''s watch and the two new ones are left');

select * from finish();
rollback;
