-- brooq.health: structure, the six checks in order (each ok, warn or fail), the
-- checks that one transaction can make fire (an expired lease nobody reaped, a
-- paused topic with ready jobs, a job that lost its lease twice), then
-- privileges under switched roles. Vacuum and the xmin horizon need other
-- sessions: tests/test_redrive_health_schedules.py.
begin;
select plan(22);

-- Structure -------------------------------------------------------------------

select has_function('brooq', 'health', array[]::text[]);
select function_returns('brooq', 'health', array[]::text[], 'setof brooq.health_check');
-- the caller's rights: pg_stat_activity shows it what PostgreSQL shows it (the
-- other sessions' part: tests/test_security.py); the job checks, the owner's
select isnt_definer('brooq', 'health', array[]::text[]);
select is_definer('brooq', '_health_jobs', array[]::text[]);
select has_composite('brooq', 'health_check', 'the type brooq.health_check');

-- Behaviour --------------------------------------------------------------------------

select results_eq($$ select name from brooq.health() $$,
    $$ values ('dead_tuples'::text), ('last_vacuum'), ('xmin_horizon'), ('expired_leases'), ('paused_topics'), ('lost_leases') $$,
    'six checks, always in this order');
select is((select count(*)::int from brooq.health() where status not in ('ok', 'warn', 'fail') or detail is null), 0,
    'each has a status (ok, warn, fail) and a detail');

set local brooq.now = '2030-01-01 00:00:00+00';
select lives_ok($$ select brooq.declare_topic('t.health', max_lease_losses => 3) $$, 'declare a topic');
select lives_ok($$ select brooq.enqueue('t.health') $$, 'enqueue');
select lives_ok($$ select brooq.claim('w', array['t.health'], lease => '10 seconds') $$, 'claim with a 10 s lease');
set local brooq.now = '2030-01-01 00:01:05+00';
select is((select status from brooq.health() where name = 'expired_leases'), 'ok', 'expired 55 s ago: ok, a reaper has a minute');
set local brooq.now = '2030-01-01 00:01:15+00';
select results_eq($$ select status, detail from brooq.health() where name = 'expired_leases' $$,
    $$ values ('warn'::text, '1 job in flight with a lease expired more than 1 minute ago, the oldest at '
               || to_char(timestamptz '2030-01-01 00:00:10+00', 'YYYY-MM-DD HH24:MI:SSOF')
               || ' (00:01:05 ago): is a worker or pg_cron''s brooq_reap running reap?') $$,
    'expired 65 s ago, and nobody reaped it: warn');
set local brooq.now = '2030-01-01 00:20:00+00';
select is((select status from brooq.health() where name = 'expired_leases'), 'fail', 'expired 20 minutes ago: fail (no reaper)');
select is((select count(*)::int from brooq.reap()), 1, 'reap: the first lease loss');
select lives_ok($$ select brooq.claim('w', array['t.health'], lease => '10 seconds') $$, 'claimed again');
set local brooq.now = '2030-01-01 00:21:00+00';
select is((select count(*)::int from brooq.reap()), 1, 'reap: the second lease loss in a row');
select is((select status from brooq.health() where name = 'lost_leases'), 'warn', 'two lease losses in a row: warn');
select lives_ok($$ select brooq.pause_topic('t.health') $$, 'pause the topic, its job ready');
select results_eq($$ select status, detail from brooq.health() where name = 'paused_topics' $$,
    $$ values ('warn'::text, 'paused: t.health (1 ready, paused since '
               || to_char(timestamptz '2030-01-01 00:21:00+00', 'YYYY-MM-DD HH24:MI:SSOF') || ')') $$,
    'a paused topic with a ready job: warn');

-- Privileges --------------------------------------------------------------------------

reset brooq.now;
set local role brooq_worker;
select is((select count(*)::int from brooq.health()), 6, 'brooq_worker may read it');
reset role;
set local role brooq_producer;
select throws_ok($$ select * from brooq.health() $$, '42501', 'permission denied for function health',
    'brooq_producer may not');
select throws_ok($$ select * from brooq._health_jobs() $$, '42501', 'permission denied for function _health_jobs',
    'nor call its job checks');
reset role;

select * from finish();
rollback;
