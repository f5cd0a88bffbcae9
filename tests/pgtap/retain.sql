-- Retention policies of a topic (declare_topic's retain_done and retain_payload):
-- settle/settle_many delete a job as they settle it done (retain_done => false),
-- the payload of a terminal job is cleared (retain_payload => false) by
-- settle_many, cancel and reap's poison pill; a watched job is kept.
begin;
select plan(43);

set local brooq.now = '2030-01-01 00:00:00+00';

-- declare_topic ------------------------------------------------------------------

select results_eq($$ select retain_done, retain_payload from brooq.declare_topic('t.keep') $$,
    $$ values (true, true) $$, 'both policies default to true (keep everything)');
select results_eq($$ select retain_done, retain_payload
                      from brooq.declare_topic('t.nodone', max_attempts => 2, retain_done => false) $$,
    $$ values (false, true) $$, 'retain_done => false is stored');
select results_eq($$ select retain_done, retain_payload
                      from brooq.declare_topic('t.nopay', max_attempts => 2, max_lease_losses => 1,
                                               retain_payload => false) $$,
    $$ values (true, false) $$, 'retain_payload => false is stored');
select throws_ok($$ select brooq.declare_topic('t.keep', retain_done => null) $$, '22004',
    'brooq.declare_topic: arguments must not be NULL', 'retain_done NULL is refused');
select throws_ok($$ select brooq.declare_topic('t.keep', retain_payload => null) $$, '22004',
    'brooq.declare_topic: arguments must not be NULL', 'retain_payload NULL is refused');
select is((select retain_done from brooq.declare_topic('t.keep')), true,
    'a declaration without the setting takes the default again');

-- retain_done => false: settle deletes the job it settles done -------------------

select id as d1 from brooq.enqueue('t.nodone', '{"n": 1}', idempotency_key => 'k1') \gset
select lease_token as d1_tok from brooq.claim('w1', array['t.nodone']) \gset
select is(brooq.settle(:d1, 'w1', :d1_tok, 'done', result => '{"r": 1}'), 'done',
    'settle returns done for a job it deletes');
select is((select count(*)::int from brooq.job where id = :d1), 0, 'the job is gone');
select is(brooq.settle(:d1, 'w1', :d1_tok, 'done'), null, 'a repeat of the settle returns NULL (nothing to settle)');
select results_eq($$ select created from brooq.enqueue('t.nodone', '{"n": 2}', idempotency_key => 'k1') $$,
    array[true], 'the idempotency key of a deleted job is free again');
select is((select count(*)::int from brooq.job where topic = 't.nodone' and idempotency_key = 'k1'
                                               and payload = '{"n": 2}'), 1, 'a new job took the key');
delete from brooq.job where topic = 't.nodone';

-- settle_many: one batch over both topics and every outcome
select lives_ok($$ select brooq.enqueue_many('t.nodone', array['{"o": "done"}', '{"o": "failed"}', '{"o": "cancel"}',
                                                              '{"o": "dead"}']::jsonb[]) $$, 'four jobs to drop or keep');
select lives_ok($$ select brooq.enqueue('t.keep', '{"o": "kept"}') $$, 'one job of a topic that keeps');
create temp table b1 on commit drop as
    select c.id, c.lease_token, c.payload->>'o' as o from brooq.claim('w1', array['t.nodone', 't.keep'], max_jobs => 10) c;
-- the "dead" job: on its last attempt already (max_attempts 2)
update brooq.job set attempts = 2 where id = (select id from b1 where o = 'dead');
create temp table s1 on commit drop as
    select * from brooq.settle_many('w1', (select array_agg(id order by id) from b1),
        (select array_agg(lease_token order by id) from b1),
        (select array_agg(case o when 'kept' then 'done' when 'dead' then 'failed' else o end order by id) from b1),
        results => (select array_agg('{"big": "result"}'::jsonb order by id) from b1));
select set_eq($$ select b1.o, s1.state::text from s1 join b1 using (id) $$,
    $$ values ('done', 'done'), ('failed', 'failed'), ('cancel', 'canceled'), ('dead', 'dead'), ('kept', 'done') $$,
    'settle_many reports every job it settled, the deleted one as done');
select set_eq($$ select b1.o from b1 where not exists (select from brooq.job j where j.id = b1.id) $$,
    array['done'], 'only the job settled done on the retain_done => false topic is deleted');
select set_eq($$ select b1.o, j.state::text, j.payload->>'o' from b1 join brooq.job j using (id) $$,
    $$ values ('failed', 'failed', 'failed'), ('cancel', 'canceled', 'cancel'), ('dead', 'dead', 'dead'),
              ('kept', 'done', 'kept') $$,
    'failed, canceled and dead jobs stay (until their TTL), with their payload; the other topic keeps done');
select is((select result from brooq.job where id = (select id from b1 where o = 'kept')), '{"big": "result"}'::jsonb,
    'the kept done job has its result');

-- the result of a deleted job is not stored, so not checked against max_payload_bytes
select lives_ok($$ select brooq.declare_topic('t.nodone', max_attempts => 2, retain_done => false,
                                              max_payload_bytes => 10) $$, 'a 10-byte limit');
select id as d2 from brooq.enqueue('t.nodone', '{}') \gset
select lease_token as d2_tok from brooq.claim('w1', array['t.nodone']) \gset
select is(brooq.settle(:d2, 'w1', :d2_tok, 'done', result => '{"far": "above ten bytes"}'), 'done',
    'an oversize result of a job deleted at once is not refused');
select is((select count(*)::int from brooq.job where id = :d2), 0, 'and the job is gone');

-- a watched job is kept, so its waiter reads its fate
select id as d3 from brooq.enqueue('t.nodone', '{"w": 1}') \gset
select lease_token as d3_tok from brooq.claim('w1', array['t.nodone']) \gset
select brooq.watch(:d3) as w3 \gset
select is(brooq.settle(:d3, 'w1', :d3_tok, 'done', result => '"ok"'), 'done', 'a watched job settles done');
select results_eq(format($$ select state::text, result from brooq.job where id = %s $$, :d3),
    $$ values ('done', '"ok"'::jsonb) $$, 'a watched job is kept with its result, for its waiter');
select is(brooq.unwatch(:w3), true, 'unwatch');
-- ... also in a settle_many batch beside one that is deleted
select lives_ok($$ select brooq.enqueue_many('t.nodone', array['{"w": 2}', '{"w": 3}']::jsonb[]) $$,
    'two jobs, one to be watched');
create temp table bw on commit drop as
    select c.id, c.lease_token, c.payload->>'w' as w from brooq.claim('w1', array['t.nodone'], max_jobs => 2) c;
select brooq.watch((select id from bw where w = '2')) as w4 \gset
create temp table sw on commit drop as
    select * from brooq.settle_many('w1', (select array_agg(id order by id) from bw),
                                    (select array_agg(lease_token order by id) from bw),
                                    array['done', 'done'], results => array['"ok"', '"ok"']::jsonb[]);
select set_eq($$ select bw.w, sw.state::text as reported, j.state::text as stored, j.result
                  from bw join sw using (id) left join brooq.job j using (id) $$,
    $$ values ('2', 'done', 'done', '"ok"'::jsonb), ('3', 'done', null, null) $$,
    'settle_many deletes the unwatched job and keeps the watched one with its result, both reported done');
select is(brooq.unwatch(:w4), true, 'unwatch the batch''s job');

-- retain_payload => false: a terminal job's payload becomes 'null'::jsonb ----------

select lives_ok($$ select brooq.enqueue_many('t.nopay', array['{"o": "done"}', '{"o": "failed"}', '{"o": "cancel"}',
                                                             '{"o": "dead"}', '{"o": "preserve"}']::jsonb[]) $$,
    'five jobs on a topic that drops payloads');
create temp table b2 on commit drop as
    select c.id, c.lease_token, c.payload->>'o' as o from brooq.claim('w1', array['t.nopay'], max_jobs => 10) c;
update brooq.job set attempts = 2 where id = (select id from b2 where o = 'dead');
select is((select count(*)::int from brooq.settle_many('w1', (select array_agg(id order by id) from b2),
        (select array_agg(lease_token order by id) from b2),
        (select array_agg(case o when 'dead' then 'failed' else o end order by id) from b2),
        results => (select array_agg('{"r": 1}'::jsonb order by id) from b2))), 5, 'all five settled');
select set_eq($$ select b2.o, j.state::text, j.payload from b2 join brooq.job j using (id) $$,
    $$ values ('done', 'done', 'null'::jsonb), ('cancel', 'canceled', 'null'), ('dead', 'dead', 'null'),
              ('failed', 'failed', '{"o": "failed"}'), ('preserve', 'failed', '{"o": "preserve"}') $$,
    'done, canceled, dead: payload null; failed (waiting for a retry): payload kept');
select results_eq($$ select result, attempts from brooq.job where id = (select id from b2 where o = 'done') $$,
    $$ values ('{"r": 1}'::jsonb, 1) $$, 'the fate stays: result and attempts of the done job');
select is((select last_error from brooq.job where id = (select id from b2 where o = 'dead')) is null, true,
    'no error given, none stored (the fate is untouched)');

-- brooq.cancel
select id as c1 from brooq.enqueue('t.nopay', '{"o": "to cancel"}') \gset
select is(brooq.cancel(:c1), true, 'cancel a pending job');
select results_eq(format($$ select state::text, payload from brooq.job where id = %s $$, :c1),
    $$ values ('canceled', 'null'::jsonb) $$, 'cancel clears the payload');
select id as c2 from brooq.enqueue('t.keep', '{"o": "to cancel"}') \gset
select is(brooq.cancel(:c2), true, 'cancel a job of a topic that keeps payloads');
select is((select payload from brooq.job where id = :c2), '{"o": "to cancel"}'::jsonb, 'its payload stays');

-- reap: the poison pill (max_lease_losses 1) is dead without its payload; a plain reap keeps it
delete from brooq.job where topic = 't.nopay' and state = 'failed';
select id as r1 from brooq.enqueue('t.nopay', '{"o": "poison"}') \gset
select id as r2 from brooq.enqueue('t.keep', '{"o": "reaped"}') \gset
select is((select count(*)::int from brooq.claim('w1', array['t.nopay', 't.keep'], max_jobs => 2, lease => '30 seconds')), 2,
    'two jobs claimed');
set local brooq.now = '2030-01-01 00:01:00+00';
select is((select count(*)::int from brooq.reap()), 2, 'both leases reaped');
select results_eq(format($$ select state::text, payload from brooq.job where id = %s $$, :r1),
    $$ values ('dead', 'null'::jsonb) $$, 'the poison pill is dead, its payload cleared');
select results_eq(format($$ select state::text, payload from brooq.job where id = %s $$, :r2),
    $$ values ('pending', '{"o": "reaped"}'::jsonb) $$, 'a job reaped back to pending keeps its payload');

-- retain_payload => false with retain_done => false: a done job is deleted, a dead one kept without payload
select lives_ok($$ select brooq.declare_topic('t.none', max_attempts => 1, retain_done => false,
                                              retain_payload => false) $$, 'a topic that keeps neither');
select lives_ok($$ select brooq.enqueue_many('t.none', array['{"o": "done"}', '{"o": "failed"}']::jsonb[]) $$, 'two jobs');
create temp table b3 on commit drop as
    select c.id, c.lease_token, c.payload->>'o' as o from brooq.claim('w1', array['t.none'], max_jobs => 2) c;
select set_eq($$ select state::text from brooq.settle_many('w1', (select array_agg(id order by id) from b3),
        (select array_agg(lease_token order by id) from b3), (select array_agg(o order by id) from b3)) $$,
    array['done', 'dead'], 'settled: done (deleted) and dead');
select results_eq($$ select state::text, payload from brooq.job where id in (select id from b3) $$,
    $$ values ('dead', 'null'::jsonb) $$, 'only the dead job remains, its payload cleared');

select * from finish();
rollback;
