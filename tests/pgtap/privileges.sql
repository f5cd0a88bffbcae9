-- The privilege matrix: which role may execute which routine and read which
-- relation (catalog), then real calls under each switched role that succeed
-- where the role has its part and fail with 42501 everywhere else.
begin;
select plan(349);

-- Structure: roles ------------------------------------------------------------

select has_role('brooq_producer');
select has_role('brooq_worker');
select has_role('brooq_admin');
select is((select count(*)::int from pg_roles where rolname in ('brooq_producer', 'brooq_worker', 'brooq_admin')
             and not rolcanlogin and not rolsuper and not rolcreaterole and not rolcreatedb and not rolbypassrls), 3,
    'the three roles are NOLOGIN and hold no special attribute');
select is_member_of('brooq_producer', array['brooq_admin'], 'brooq_admin is a member of brooq_producer');
select is_member_of('brooq_worker', array['brooq_admin'], 'brooq_admin is a member of brooq_worker');
select isnt_member_of('brooq_worker', array['brooq_producer'], 'brooq_producer is not a worker');
select isnt_member_of('brooq_producer', array['brooq_worker'], 'brooq_worker is not a producer');

-- Structure: the matrix (has_function_privilege follows role membership) ------

create temp table matrix (routine regprocedure, producer boolean, worker boolean, admin boolean) on commit drop;
insert into matrix values
    ('brooq.declare_topic(text, integer, interval, interval, interval, integer, boolean, interval, integer, integer, integer, interval, interval, boolean, boolean)', false, false, true),
    ('brooq.alter_topic(text, integer, interval, interval, interval, integer, boolean, interval, integer, integer, integer, interval, interval, boolean, boolean, text[])', false, false, true),
    ('brooq._write_topic(brooq.topic)', false, false, false),
    ('brooq.pause_topic(text)', false, false, true),
    ('brooq.resume_topic(text)', false, false, true),
    ('brooq.enqueue(text, jsonb, text, timestamptz, integer, interval, text, jsonb, bigint[], text)', true, false, true),
    ('brooq.enqueue_many(text, jsonb[], text[], timestamptz, integer, interval, text[], jsonb, integer[], bigint[], text)', true, false, true),
    ('brooq._release(bigint[], text[])', false, false, false),
    ('brooq._rearm(bigint[], boolean)', false, false, false),
    ('brooq._release_missed(integer)', false, false, false),
    ('brooq.parents(bigint)', true, true, true),
    ('brooq.children(bigint, integer)', true, true, true),
    ('brooq.claim(text, text[], integer, interval)', false, true, true),
    ('brooq.settle(bigint, text, bigint, text, text, interval, jsonb)', false, true, true),
    ('brooq.settle_many(text, bigint[], bigint[], text[], text[], interval[], jsonb[])', false, true, true),
    ('brooq.heartbeat(text, bigint[], interval, bigint[], jsonb[])', false, true, true),
    ('brooq.watch(bigint)', true, true, true),
    ('brooq.unwatch(bigint)', true, true, true),
    ('brooq.reap(integer)', false, true, true),
    ('brooq.cancel(bigint)', false, false, true),
    ('brooq.retry(bigint, boolean, boolean)', false, false, true),
    ('brooq.retry_dead(text, boolean, integer, timestamptz, boolean, boolean)', false, false, true),
    ('brooq._retry(bigint[], text[], boolean, boolean)', false, false, false),
    ('brooq.checkpoint(text, bigint, bigint, text, jsonb)', false, true, true),
    ('brooq.steps(bigint, integer)', true, true, true),
    ('brooq.sleep(text, bigint, bigint, text, timestamptz, interval)', false, true, true),
    ('brooq.wait_for_event(text, bigint, bigint, text, text, interval)', false, true, true),
    ('brooq.emit_event(text, jsonb, interval)', true, false, true),
    ('brooq._wake_missed()', false, false, false),
    ('brooq.health()', false, true, true),
    ('brooq._health_jobs()', false, true, true),
    ('brooq.schedule(text, text, text, jsonb, integer, text)', false, false, true),
    ('brooq.unschedule(text)', false, false, true),
    ('brooq.tick_schedules(integer)', false, true, true),
    ('brooq._schedule_tick(text)', false, false, false),
    ('brooq._schedule_tick_at(text, timestamptz)', false, false, false),
    ('brooq._schedule_next(text, timestamptz)', false, false, false),
    ('brooq._cron_values(text, integer, integer, text)', false, false, false),
    ('brooq.drop_topic(text, boolean)', false, false, true),
    ('brooq.purge(integer)', false, false, true),
    ('brooq.purge_all(integer, integer)', false, false, true),
    ('brooq.purge_remainder()', false, false, true),
    ('brooq.flush(text, text[])', false, false, true),
    ('brooq.schedule_maintenance(text, text)', false, false, true),
    ('brooq.unschedule_maintenance()', false, false, true),
    ('brooq.version()', true, true, true),
    ('brooq._now()', false, true, true),
    ('brooq._backoff(interval, interval, integer)', false, false, false),
    ('brooq._available_at(timestamptz, timestamptz, interval)', false, false, false),
    ('brooq._set_paused(text, boolean)', false, false, false),
    ('brooq._require_pg_cron()', false, false, false),
    ('brooq._duration_ok(interval)', false, false, false),
    ('brooq._result_too_large(bigint, integer, integer, text)', false, false, false),
    ('brooq._trace_context(jsonb, text)', false, false, false),
    ('brooq._settle_rows(bigint[], bigint[], text[], text[], interval[], jsonb[])', false, false, false),
    ('brooq._heartbeat_rows(bigint[], bigint[], jsonb[])', false, false, false),
    ('brooq.enqueue_staged(uuid, text, jsonb[], text[], timestamptz, integer, interval, text[], jsonb)', true, false, true),
    ('brooq.decide_staged(uuid, text)', true, false, true),
    ('brooq.forget_staged(interval, uuid[])', false, false, true);

select set_eq($$ select oid::regprocedure::text from pg_proc where pronamespace = 'brooq'::regnamespace $$,
    $$ select routine::text from matrix $$, 'the matrix covers every routine in schema brooq');
select is(has_function_privilege(r.role, m.routine, 'execute'), x.expected,
          format('%s %s execute %s', r.role, case when x.expected then 'may' else 'may not' end, m.routine))
  from matrix m
 cross join (values ('brooq_producer'), ('brooq_worker'), ('brooq_admin'), ('public')) as r(role)
 cross join lateral (select case r.role when 'brooq_producer' then m.producer when 'brooq_worker' then m.worker
                                        when 'brooq_admin' then m.admin else false end as expected) as x
 order by m.routine::text, r.role;

select is((select count(*)::int from matrix m
            where (has_function_privilege('brooq_producer', m.routine, 'execute') <> m.producer)
               or (has_function_privilege('brooq_worker', m.routine, 'execute') <> m.worker)
               or (has_function_privilege('brooq_admin', m.routine, 'execute') <> m.admin)
               or has_function_privilege('public', m.routine, 'execute')), 0,
    'no routine deviates from the matrix');

select table_privs_are('brooq', 'topic_stats', 'brooq_worker', array['SELECT'], 'brooq_worker may only read topic_stats');
select table_privs_are('brooq', 'in_flight', 'brooq_worker', array['SELECT'], 'brooq_worker may only read in_flight');
select table_privs_are('brooq', 'topic_stats', 'brooq_admin', array['SELECT'], 'brooq_admin may only read topic_stats');
select table_privs_are('brooq', 'topic_stats', 'brooq_producer', array[]::text[], 'brooq_producer may not read topic_stats');
select table_privs_are('brooq', 'in_flight', 'brooq_producer', array[]::text[], 'brooq_producer may not read in_flight');
select table_privs_are('brooq', 'retention_stats', 'brooq_worker', array['SELECT'], 'brooq_worker may only read retention_stats');
select table_privs_are('brooq', 'topics', 'brooq_worker', array['SELECT'], 'brooq_worker may only read topics');
select table_privs_are('brooq', 'topics', 'brooq_admin', array['SELECT'], 'brooq_admin may only read topics');
select table_privs_are('brooq', 'topics', 'brooq_producer', array[]::text[], 'brooq_producer may not read topics');
select table_privs_are('brooq', 'retention_stats', 'brooq_producer', array[]::text[], 'brooq_producer may not read retention_stats');
select is((select count(*)::int from pg_class c, aclexplode(c.relacl) a
            where c.relnamespace = 'brooq'::regnamespace and a.grantee = 0), 0, 'PUBLIC has no privilege on any brooq relation');
-- only brooq's owner reads the parents claim hands a child (brooq.claim)
select table_privs_are('brooq', '_job_parents', 'brooq_producer', array[]::text[], 'brooq_producer has no right on _job_parents');
select table_privs_are('brooq', '_job_parents', 'brooq_worker', array[]::text[], 'brooq_worker has no right on _job_parents');
select table_privs_are('brooq', '_job_parents', 'brooq_admin', array[]::text[], 'brooq_admin has no right on _job_parents');
-- only brooq's owner may lock a topic's flow lock (brooq.claim)
select table_privs_are('brooq', 'flow_lock', 'brooq_worker', array[]::text[], 'brooq_worker has no right on flow_lock');
select table_privs_are('brooq', 'flow_lock', 'brooq_admin', array[]::text[], 'brooq_admin has no right on flow_lock');
select sequence_privs_are('brooq', 'job_id_seq', 'brooq_producer', array[]::text[], 'brooq_producer has no right on the id sequence');
select sequence_privs_are('brooq', 'job_id_seq', 'brooq_worker', array[]::text[], 'brooq_worker has no right on the id sequence');
select sequence_privs_are('brooq', 'job_id_seq', 'brooq_admin', array[]::text[], 'brooq_admin has no right on the id sequence');
select is((select count(*)::int from pg_namespace n, aclexplode(n.nspacl) a where n.nspname = 'brooq' and a.grantee = 0), 0,
    'PUBLIC may not even use the schema');

-- Behaviour: real calls under each role --------------------------------------------------

set local brooq.now = '2030-01-01 00:00:00+00';
select lives_ok($$ select brooq.declare_topic('t.priv') $$, 'as the owner: declare a topic');
select id as j from brooq.enqueue('t.priv', '{"n": 1}') \gset

-- brooq_producer: enqueue, nothing else
set local role brooq_producer;
select lives_ok($$ select brooq.enqueue('t.priv', '{"by": "producer"}') $$, 'producer: enqueue');
select lives_ok($$ select brooq.enqueue_many('t.priv', array['{"by": "producer"}']::jsonb[]) $$, 'producer: enqueue_many');
select lives_ok(format($$ select brooq.enqueue('t.priv', '{"by": "producer", "after": true}', after => array[%s]::bigint[]) $$, :j),
    'producer: enqueue a job that waits for another (workflows)');
select lives_ok(format($$ select brooq.enqueue_many('t.priv', array['{}', '{}']::jsonb[], after_child => array[1, 2],
                                                    after_parent => array[%s, -1]::bigint[]) $$, :j),
    'producer: enqueue_many with edges');
select throws_ok($$ select * from brooq.job_edge $$, '42501', 'permission denied for table job_edge', 'producer: no select on job_edge');
select throws_ok($$ delete from brooq.job_edge_check $$, '42501', 'permission denied for table job_edge_check',
    'producer: no delete from job_edge_check');
select throws_ok($$ select brooq._release_missed(10) $$, '42501', 'permission denied for function _release_missed',
    'producer: no _release_missed (only reap calls it)');
select throws_ok($$ select brooq._release(array[1]::bigint[], array['done']) $$, '42501', 'permission denied for function _release',
    'producer: no _release (only the functions that end a job call it)');
select throws_ok($$ select brooq.claim('p', array['t.priv']) $$, '42501', 'permission denied for function claim', 'producer: no claim');
select throws_ok(format($$ select brooq.settle(%s, 'p', 1, 'done') $$, :j), '42501', 'permission denied for function settle',
    'producer: no settle');
select throws_ok($$ select brooq.settle_many('p', array[1]::bigint[], array[1]::bigint[], array['done']) $$, '42501',
    'permission denied for function settle_many', 'producer: no settle_many');
select throws_ok(format($$ select brooq.heartbeat('p', array[%s]::bigint[]) $$, :j), '42501',
    'permission denied for function heartbeat', 'producer: no heartbeat');
select throws_ok($$ select brooq.reap() $$, '42501', 'permission denied for function reap', 'producer: no reap');
select throws_ok(format($$ select brooq.cancel(%s) $$, :j), '42501', 'permission denied for function cancel', 'producer: no cancel');
select throws_ok($$ select brooq.purge() $$, '42501', 'permission denied for function purge', 'producer: no purge');
select throws_ok($$ select brooq.declare_topic('t.priv.p') $$, '42501', 'permission denied for function declare_topic',
    'producer: no declare_topic');
select throws_ok($$ select brooq.pause_topic('t.priv') $$, '42501', 'permission denied for function pause_topic',
    'producer: no pause_topic');
select throws_ok($$ select brooq.schedule_maintenance() $$, '42501', 'permission denied for function schedule_maintenance',
    'producer: no schedule_maintenance');
select throws_ok($$ select * from brooq.topic_stats $$, '42501', 'permission denied for view topic_stats', 'producer: no topic_stats');
select throws_ok($$ select * from brooq.in_flight $$, '42501', 'permission denied for view in_flight', 'producer: no in_flight');
select throws_ok($$ select * from brooq.job $$, '42501', 'permission denied for table job', 'producer: no select on job');
select throws_ok($$ insert into brooq.job (topic, payload, max_attempts, available_at, created_at, updated_at)
                    values ('t.priv', '{}', 1, now(), now(), now()) $$, '42501', 'permission denied for table job',
    'producer: no insert into job (enqueue is the only way in)');
select throws_ok($$ select * from brooq.topic $$, '42501', 'permission denied for table topic', 'producer: no select on topic');
select throws_ok($$ select * from brooq.tick_schedules() $$, '42501', 'permission denied for function tick_schedules',
    'producer: no tick_schedules');
select throws_ok($$ select brooq.drop_topic('t.priv') $$, '42501', 'permission denied for function drop_topic',
    'producer: no drop_topic');
select throws_ok($$ select brooq._now() $$, '42501', 'permission denied for function _now', 'producer: no _now');
select lives_ok($$ select brooq.emit_event('priv.event', '{"by": "producer"}') $$, 'producer: emit_event');
select throws_ok(format($$ select brooq.checkpoint('p', %s, 1, 'x', '1') $$, :j), '42501',
    'permission denied for function checkpoint', 'producer: no checkpoint');
select throws_ok($$ select brooq._wake_missed() $$, '42501', 'permission denied for function _wake_missed',
    'producer: no _wake_missed (only reap calls it)');
reset role;

-- brooq_worker: claim, settle, heartbeat, reap, the views; nothing else
set local role brooq_worker;
create temp table got on commit drop as select * from brooq.claim('w', array['t.priv'], max_jobs => 10);
select is((select count(*)::int from got), 3, 'worker: claim');
select set_eq($$ select * from brooq.heartbeat('w', array(select id from got order by id), '30 seconds',
                                               array(select lease_token from got order by id)) $$, $$ select id from got $$,
    'worker: heartbeat');
select is(brooq.settle(:j, 'w', (select lease_token from got where id = :j), 'done'), 'done', 'worker: settle');
select is((select count(*)::int from brooq.settle_many('w', array(select id from got where id <> :j),
                                                       array(select lease_token from got where id <> :j order by id),
                                                       array['preserve', 'preserve'])), 2, 'worker: settle_many');
select lives_ok($$ select brooq.reap() $$, 'worker: reap');
select lives_ok($$ select * from brooq.topic_stats $$, 'worker: read topic_stats');
select lives_ok($$ select * from brooq.in_flight $$, 'worker: read in_flight');
select lives_ok($$ select brooq._now() $$, 'worker: _now (the views call it as the reader)');
select lives_ok($$ select * from brooq.tick_schedules() $$, 'worker: tick_schedules');
select throws_ok($$ select brooq.drop_topic('t.priv') $$, '42501', 'permission denied for function drop_topic',
    'worker: no drop_topic');
select throws_ok($$ select brooq.enqueue('t.priv') $$, '42501', 'permission denied for function enqueue', 'worker: no enqueue');
select throws_ok($$ select brooq.emit_event('priv.event') $$, '42501', 'permission denied for function emit_event',
    'worker: no emit_event (a producer''s call)');
select throws_ok($$ select brooq.enqueue_many('t.priv', array['{}']::jsonb[]) $$, '42501',
    'permission denied for function enqueue_many', 'worker: no enqueue_many');
select throws_ok(format($$ select brooq.cancel(%s) $$, :j), '42501', 'permission denied for function cancel', 'worker: no cancel');
select throws_ok($$ select brooq.purge() $$, '42501', 'permission denied for function purge', 'worker: no purge');
select throws_ok($$ call brooq.purge_all() $$, '42501', 'permission denied for procedure purge_all', 'worker: no purge_all');
select throws_ok($$ select brooq.declare_topic('t.priv.w') $$, '42501', 'permission denied for function declare_topic',
    'worker: no declare_topic');
select throws_ok($$ select brooq.pause_topic('t.priv') $$, '42501', 'permission denied for function pause_topic',
    'worker: no pause_topic');
select throws_ok($$ select brooq.resume_topic('t.priv') $$, '42501', 'permission denied for function resume_topic',
    'worker: no resume_topic');
select throws_ok($$ select brooq.schedule_maintenance() $$, '42501', 'permission denied for function schedule_maintenance',
    'worker: no schedule_maintenance');
select throws_ok($$ select brooq.unschedule_maintenance() $$, '42501', 'permission denied for function unschedule_maintenance',
    'worker: no unschedule_maintenance');
select throws_ok($$ select * from brooq.job $$, '42501', 'permission denied for table job', 'worker: no select on job');
select throws_ok($$ update brooq.job set state = 'done' $$, '42501', 'permission denied for table job', 'worker: no update on job');
select throws_ok($$ delete from brooq.job $$, '42501', 'permission denied for table job', 'worker: no delete on job');
select throws_ok($$ update brooq.topic set paused = true $$, '42501', 'permission denied for table topic', 'worker: no update on topic');
select throws_ok($$ select brooq._backoff('1 second', '1 minute', 1) $$, '42501', 'permission denied for function _backoff',
    'worker: no private _backoff');
select throws_ok($$ select brooq._set_paused('t.priv', true) $$, '42501', 'permission denied for function _set_paused',
    'worker: no private _set_paused (pause goes through pause_topic)');
reset role;

-- brooq_admin: everything through the functions; still no table access
set local role brooq_admin;
select lives_ok($$ select brooq.declare_topic('t.priv.admin') $$, 'admin: declare_topic');
select lives_ok($$ select brooq.pause_topic('t.priv.admin'), brooq.resume_topic('t.priv.admin') $$, 'admin: pause and resume');
select id as aj from brooq.enqueue('t.priv.admin', '{"by": "admin"}') \gset
select lives_ok($$ select brooq.enqueue_many('t.priv.admin', array['{}']::jsonb[]) $$, 'admin: enqueue_many');
select is((select count(*)::int from brooq.claim('a', array['t.priv.admin'], max_jobs => 10)), 2, 'admin: claim');
select lives_ok($$ select brooq.heartbeat('a', array[1]::bigint[], '30 seconds', array[1]::bigint[]) $$, 'admin: heartbeat');
select ok(brooq.cancel(:aj), 'admin: cancel');
select lives_ok($$ select brooq.reap() $$, 'admin: reap');
select lives_ok($$ select brooq.purge() $$, 'admin: purge');
select lives_ok($$ select * from brooq.topic_stats $$, 'admin: read topic_stats');
select lives_ok($$ select brooq.alter_topic('t.priv.admin', max_attempts => 3) $$, 'admin: alter_topic');
select is((select max_attempts from brooq.topics where name = 't.priv.admin'), 3, 'admin: read a topic''s settings in brooq.topics');
select lives_ok($$ select brooq.declare_topic('t.priv.drop') $$, 'admin: declare a topic to drop');
select is(brooq.drop_topic('t.priv.drop'), 0::bigint, 'admin: drop_topic');
select throws_ok($$ select brooq._write_topic(null::brooq.topic) $$, '42501', 'permission denied for function _write_topic',
    'admin: no private _write_topic');
select throws_ok($$ select * from brooq.job $$, '42501', 'permission denied for table job', 'admin: no select on job');
select throws_ok($$ insert into brooq.job (topic, payload, max_attempts, available_at, created_at, updated_at)
                    values ('t.priv', '{}', 1, now(), now(), now()) $$, '42501', 'permission denied for table job',
    'admin: no insert into job');
select throws_ok($$ delete from brooq.topic $$, '42501', 'permission denied for table topic', 'admin: no delete on topic');
select throws_ok($$ select brooq._set_paused('t.priv', true) $$, '42501', 'permission denied for function _set_paused',
    'admin: no private _set_paused');
select throws_ok($$ select brooq._available_at(now(), null, null) $$, '42501', 'permission denied for function _available_at',
    'admin: no private _available_at');
select throws_ok($$ create table brooq.mine (x int) $$, '42501', 'permission denied for schema brooq',
    'admin: cannot create objects in schema brooq');
reset role;

-- a role with no brooq role (PUBLIC only) can do nothing; a login role granted one inherits it
create role brooq_tap_nobody nologin;
create role brooq_tap_app nologin;
grant brooq_producer to brooq_tap_app;
set local role brooq_tap_nobody;
select throws_ok($$ select brooq.enqueue('t.priv') $$, '42501', 'permission denied for schema brooq',
    'PUBLIC cannot even reach the schema: no enqueue');
select throws_ok($$ select brooq.claim('x', array['t.priv']) $$, '42501', 'permission denied for schema brooq', 'nor claim');
select throws_ok($$ select * from brooq.topic_stats $$, '42501', 'permission denied for schema brooq', 'nor read the views');
select throws_ok($$ select brooq.emit_event('priv.event') $$, '42501', 'permission denied for schema brooq', 'nor emit an event');
reset role;
set local role brooq_tap_app;
select lives_ok($$ select brooq.enqueue('t.priv', '{"by": "app"}') $$, 'a role granted brooq_producer can enqueue');
select throws_ok($$ select brooq.claim('x', array['t.priv']) $$, '42501', 'permission denied for function claim',
    'and nothing more');
reset role;

select * from finish();
rollback;
