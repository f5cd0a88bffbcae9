-- brooq.schedule, brooq.unschedule, brooq._schedule_tick and the view
-- brooq.schedules: structure, the tick (one job per tick, also when a tick runs
-- twice; minute and N-second steps), registration with pg_cron (idempotent, run
-- as the owner, a qualified command), errors, the 55000 without pg_cron
-- (simulated by dropping pg_cron inside this rolled-back transaction), then
-- privileges under switched roles. Where pg_cron is not installed at all, the
-- pg_cron tests are skipped.
begin;
select plan(37);

-- Structure -------------------------------------------------------------------

select has_function('brooq', 'schedule', array['text', 'text', 'text', 'jsonb', 'integer']);
select function_returns('brooq', 'schedule', array['text', 'text', 'text', 'jsonb', 'integer'], 'bigint');
select is_definer('brooq', 'schedule', array['text', 'text', 'text', 'jsonb', 'integer']);
select has_function('brooq', 'unschedule', array['text']);
select is_definer('brooq', 'unschedule', array['text']);
select has_view('brooq', 'schedules', 'the view brooq.schedules');
select has_table('brooq', 'schedule', 'the private table brooq.schedule');

-- Privileges (hold with or without pg_cron) ---------------------------------------------

set local role brooq_worker;
select throws_ok($$ select brooq.schedule('x', '* * * * *', 'x') $$, '42501', 'permission denied for function schedule',
    'brooq_worker cannot schedule');
select throws_ok($$ select brooq.unschedule('x') $$, '42501', 'permission denied for function unschedule',
    'brooq_worker cannot unschedule');
select lives_ok($$ select * from brooq.schedules $$, 'brooq_worker may read brooq.schedules');
select throws_ok($$ select brooq._schedule_tick('x') $$, '42501', 'permission denied for function _schedule_tick',
    'brooq_worker cannot tick');
reset role;
set local role brooq_producer;
select throws_ok($$ select * from brooq.schedules $$, '42501', 'permission denied for view schedules',
    'brooq_producer may not read brooq.schedules');
reset role;

-- The tick ----------------------------------------------------------------------------

select is(brooq._schedule_tick_at('0 3 * * *', '2030-01-01 03:00:59.9+00'), '2030-01-01 03:00:00+00'::timestamptz,
    'a cron schedule ticks by the minute');
select is(brooq._schedule_tick_at('10 seconds', '2030-01-01 03:00:19.9+00'), '2030-01-01 03:00:10+00'::timestamptz,
    'an N seconds schedule ticks by steps of N seconds');
select is(brooq._schedule_tick_at(' 1 second ', '2030-01-01 03:00:19.9+00'), '2030-01-01 03:00:19+00'::timestamptz,
    'one second');

set local brooq.now = '2030-01-01 00:00:00+00';
select lives_ok($$ select brooq.declare_topic('t.schedule') $$, 'declare the topic');
-- the row alone (as brooq.schedule writes it), to tick without pg_cron
insert into brooq.schedule (name, cron, topic, payload, priority, created_at, updated_at)
values ('t-tick', '0 3 * * *', 't.schedule', '{"report": "daily"}', 7, now(), now());
set local brooq.now = '2030-01-01 03:00:00.4+00';
select brooq._schedule_tick('t-tick') as first \gset
set local brooq.now = '2030-01-01 03:00:41+00';
select is(brooq._schedule_tick('t-tick'), :first::bigint, 'the same tick run twice: the same job');
select results_eq($$ select idempotency_key, payload, priority, state::text from brooq.job where topic = 't.schedule' $$,
    $$ values ('schedule:t-tick:2030-01-01T03:00:00Z'::text, '{"report": "daily"}'::jsonb, 7, 'pending'::text) $$,
    'one job for the tick, keyed by the schedule and the tick, with its payload and priority');
set local brooq.now = '2030-01-02 03:00:00.2+00';
select isnt(brooq._schedule_tick('t-tick'), :first::bigint, 'the next tick: a new job');
select results_eq($$ select name, last_tick_at, last_job_state::text from brooq.schedules where name = 't-tick' $$,
    $$ values ('t-tick'::text, timestamptz '2030-01-02 03:00:00+00', 'pending'::text) $$,
    'brooq.schedules shows the last tick and its job');
select is((select count(*)::int from brooq.job where topic = 't.schedule'), 2, 'two ticks, two jobs');
select is(brooq._schedule_tick('gone'), null, 'a schedule that is gone enqueues nothing');
select ok(brooq.unschedule('t-tick'), 'unschedule a schedule (without pg_cron job) returns true');
select is(brooq.unschedule('t-tick'), false, 'and false once it is gone');

-- With pg_cron ----------------------------------------------------------------------------

select to_regnamespace('cron') is not null as has_cron \gset
\if :has_cron

set local role brooq_admin;
select brooq.schedule('t-nightly', '0 3 * * *', 't.schedule', '{"n": 1}') as jobid \gset
reset role;
select results_eq(
    $$ select jobname::text collate "default", schedule::text, command::text, username::text
         from cron.job where jobname = 'brooq_schedule.t-nightly' $$,
    $$ values ('brooq_schedule.t-nightly'::text, '0 3 * * *'::text, 'select brooq._schedule_tick(''t-nightly'')'::text,
               (select nspowner::regrole::text from pg_namespace where nspname = 'brooq')) $$,
    'a pg_cron job named after the schedule, run as the owner of brooq, naming the schedule only');
select is(brooq.schedule('t-nightly', '30 4 * * *', 't.schedule', '{"n": 2}', priority => 3), :jobid::bigint,
    'scheduling the same name again keeps the pg_cron job');
select results_eq($$ select s.cron, s.payload, s.priority, c.schedule::text from brooq.schedules s, cron.job c
                      where s.name = 't-nightly' and c.jobname = 'brooq_schedule.t-nightly' $$,
    $$ values ('30 4 * * *'::text, '{"n": 2}'::jsonb, 3, '30 4 * * *'::text) $$, 'and updates it, here and in cron.job');
select throws_ok($$ select brooq.schedule('t-bad', 'every tuesday', 't.schedule') $$, '22023',
    'invalid schedule: every tuesday', 'a schedule pg_cron rejects is 22023');
select is((select count(*)::int from brooq.schedules where name = 't-bad'), 0, 'and nothing is written');
select ok(brooq.unschedule('t-nightly'), 'unschedule');
select is((select count(*)::int from cron.job where jobname = 'brooq_schedule.t-nightly'), 0, 'the pg_cron job is gone');
select lives_ok($$ drop extension pg_cron $$, 'drop pg_cron (inside the rolled-back transaction)');

\else

select skip('pg_cron is not installed in this database', 8);

\endif

-- Errors -------------------------------------------------------------------------------------

select throws_ok($$ select brooq.schedule('t-x', '* * * * *', 't.schedule') $$, '55000',
    'pg_cron is not installed in database "' || current_database() || '"', 'without pg_cron: 55000');
select throws_ok($$ select brooq.schedule('Bad Name', '* * * * *', 't.schedule') $$, '22023',
    'invalid schedule name "Bad Name"', 'a bad name is 22023');
select throws_ok($$ select brooq.schedule('t-x', '* * * * *', 't.nope') $$, '42704',
    'topic "t.nope" does not exist', 'an unknown topic is 42704');
select throws_ok($$ select brooq.schedule('t-x', null, 't.schedule') $$, '22004',
    'brooq.schedule: name, cron, topic, payload and priority must not be NULL', 'a NULL schedule is 22004');
select throws_ok(format($$ select brooq.schedule('t-x', %L, 't.schedule') $$, repeat('* ', 60)), '22023',
    'invalid schedule "' || left(repeat('* ', 60), 40) || '...": longer than 100 characters', 'an overlong schedule is 22023');

select * from finish();
rollback;
