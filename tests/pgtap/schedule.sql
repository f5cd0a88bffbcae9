-- brooq.schedule, brooq.unschedule, brooq._schedule_tick, brooq.tick_schedules and
-- the view brooq.schedules: structure, the pg_cron tick (one job per tick, also when
-- a tick runs twice; minute and N-second steps), the workers' tick (cron with
-- seconds, catching up late ticks, one job for a long gap, SKIP LOCKED, a failing
-- tick; a producer can neither squat a tick's job nor make a tick wait), the next tick of a cron schedule, registration with pg_cron (idempotent,
-- run as the owner, a qualified command) and the choice of ticker, errors, the
-- 55000 without pg_cron (simulated by dropping pg_cron inside this rolled-back
-- transaction), then privileges under switched roles. Where pg_cron is not
-- installed at all, the pg_cron tests are skipped.
begin;
select plan(102);

-- Structure -------------------------------------------------------------------

select has_function('brooq', 'schedule', array['text', 'text', 'text', 'jsonb', 'integer', 'text']);
select function_returns('brooq', 'schedule', array['text', 'text', 'text', 'jsonb', 'integer', 'text'], 'bigint');
select is_definer('brooq', 'schedule', array['text', 'text', 'text', 'jsonb', 'integer', 'text']);
select has_function('brooq', 'unschedule', array['text']);
select has_function('brooq', 'tick_schedules', array['integer']);
select function_returns('brooq', 'tick_schedules', array['integer'], 'setof brooq.ticked_job');
select is_definer('brooq', 'tick_schedules', array['integer']);
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
    'brooq_worker cannot run pg_cron''s tick');
select lives_ok($$ select * from brooq.tick_schedules() $$, 'brooq_worker may tick the workers'' schedules');
reset role;
set local role brooq_producer;
select throws_ok($$ select * from brooq.schedules $$, '42501', 'permission denied for view schedules',
    'brooq_producer may not read brooq.schedules');
select throws_ok($$ select * from brooq.tick_schedules() $$, '42501', 'permission denied for function tick_schedules',
    'brooq_producer may not tick');
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
insert into brooq.schedule (name, cron, topic, payload, priority, created_at, updated_at, ticker)
values ('t-tick', '0 3 * * *', 't.schedule', '{"report": "daily"}', 7, now(), now(), 'pg_cron');
set local brooq.now = '2030-01-01 03:00:00.4+00';
select brooq._schedule_tick('t-tick') as first \gset
set local brooq.now = '2030-01-01 03:00:41+00';
select is(brooq._schedule_tick('t-tick'), :first::bigint, 'the same tick run twice: the same job');
select results_eq($$ select idempotency_key, payload, priority, state::text from brooq.job where topic = 't.schedule' $$,
    $$ values (null::text, '{"report": "daily"}'::jsonb, 7, 'pending'::text) $$,
    'one job for the tick, with its payload and priority, and no idempotency key');
set local brooq.now = '2030-01-02 03:00:00.2+00';
select isnt(brooq._schedule_tick('t-tick'), :first::bigint, 'the next tick: a new job');
select results_eq($$ select name, last_tick_at, last_job_state::text from brooq.schedules where name = 't-tick' $$,
    $$ values ('t-tick'::text, timestamptz '2030-01-02 03:00:00+00', 'pending'::text) $$,
    'brooq.schedules shows the last tick and its job');
select is((select count(*)::int from brooq.job where topic = 't.schedule'), 2, 'two ticks, two jobs');
select is(brooq._schedule_tick('gone'), null, 'a schedule that is gone enqueues nothing');
select ok(brooq.unschedule('t-tick'), 'unschedule a schedule (without pg_cron job) returns true');
select is(brooq.unschedule('t-tick'), false, 'and false once it is gone');


-- The next tick of a schedule (UTC) ----------------------------------------------------

select is(brooq._schedule_next('0 3 * * *', '2030-01-01 03:00:00+00'), '2030-01-02 03:00:00+00'::timestamptz,
    'the next tick is strictly after the instant');
select is(brooq._schedule_next('*/10 * * * * *', '2030-01-01 02:59:59.5+00'), '2030-01-01 03:00:00+00'::timestamptz,
    'six fields: the first is the second');
select is(brooq._schedule_next('15 seconds', '2030-01-01 03:00:15+00'), '2030-01-01 03:00:30+00'::timestamptz,
    'N seconds: steps of N seconds since the epoch');
select is(brooq._schedule_next('0 9 * * mon-fri', '2030-01-04 10:00:00+00'), '2030-01-07 09:00:00+00'::timestamptz,
    'weekday names and ranges: Friday 10:00 -> Monday 09:00');
select is(brooq._schedule_next('0 0 1 * 1', '2030-01-01 10:00:00+00'), '2030-01-07 00:00:00+00'::timestamptz,
    'both days restricted: either matches (the first Monday before the 1st of February)');
select is(brooq._schedule_next('0 0 * * 7', '2030-01-01 10:00:00+00'), '2030-01-06 00:00:00+00'::timestamptz,
    '7 is Sunday');
select is(brooq._schedule_next('5/15 * * * *', '2030-01-01 10:00:00+00'), '2030-01-01 10:05:00+00'::timestamptz,
    'a/s: from a, every s');
select is(brooq._schedule_next('@hourly', '2030-01-01 10:00:00+00'), '2030-01-01 11:00:00+00'::timestamptz,
    '@hourly');
select is(brooq._schedule_next('0 0 29 feb *', '2030-01-01 00:00:00+00'), '2032-02-29 00:00:00+00'::timestamptz,
    '29 February: the next leap year');
select is(brooq._schedule_next('0 0 30 2 *', '2030-01-01 00:00:00+00'), null, '30 February: never');

-- The workers' tick ----------------------------------------------------------------------

set local brooq.now = '2030-03-01 00:00:00+00';
select is(brooq.schedule('t-sec', '*/2 * * * * *', 't.schedule', '{"s": 1}', 2, ticker => 'workers'), null,
    'a schedule the workers tick: no pg_cron job');
select results_eq($$ select ticker, next_tick_at from brooq.schedules where name = 't-sec' $$,
    $$ values ('workers'::text, timestamptz '2030-03-01 00:00:02+00') $$, 'its ticker and the first tick it owes');
select is((select count(*)::int from brooq.tick_schedules()), 0, 'nothing is due before its tick');
set local brooq.now = '2030-03-01 00:00:06.3+00';
select results_eq($$ select schedule, tick, created, error from brooq.tick_schedules() $$,
    $$ values ('t-sec'::text, timestamptz '2030-03-01 00:00:02+00', true, null::text),
              ('t-sec', '2030-03-01 00:00:04+00', true, null), ('t-sec', '2030-03-01 00:00:06+00', true, null) $$,
    'a late call catches up each tick that came, oldest first');
select is((select count(*)::int from brooq.tick_schedules()), 0, 'a second call at the same time: nothing more');
select results_eq($$ select idempotency_key, payload, priority from brooq.job
                      where topic = 't.schedule' and payload = '{"s": 1}' order by id $$,
    $$ values (null::text, '{"s": 1}'::jsonb, 2), (null, '{"s": 1}', 2), (null, '{"s": 1}', 2) $$,
    'one job per tick, with its payload and priority, and no idempotency key');
select results_eq($$ select next_tick_at, last_tick_at, last_job_state::text from brooq.schedules where name = 't-sec' $$,
    $$ values (timestamptz '2030-03-01 00:00:08+00', timestamptz '2030-03-01 00:00:06+00', 'pending'::text) $$,
    'brooq.schedules: the next tick owed, the last one enqueued');
select is(brooq.schedule('t-sec', '*/2 * * * * *', 't.schedule', '{"s": 1}', 2, ticker => 'workers'), null,
    'the same schedule again');
select is((select next_tick_at from brooq.schedules where name = 't-sec'), '2030-03-01 00:00:08+00'::timestamptz,
    'keeps the tick it owes');
-- a long gap: one job for the first tick missed, then the first tick after now
set local brooq.now = '2030-03-01 05:00:01+00';
select results_eq($$ select schedule, tick from brooq.tick_schedules() $$,
    $$ values ('t-sec'::text, timestamptz '2030-03-01 00:00:08+00') $$,
    'after a gap of hours: one job, for the first tick missed');
select is((select next_tick_at from brooq.schedules where name = 't-sec'), '2030-03-01 05:00:02+00'::timestamptz,
    'and the ticks between are skipped');
-- a tick whose enqueue fails: skipped, the error kept
set local brooq.now = '2030-03-01 05:00:02+00';
select lives_ok($$ select brooq.alter_topic('t.schedule', max_payload_bytes => 5) $$, 'the topic now refuses the payload');
select results_eq($$ select schedule, tick, job_id, created, error from brooq.tick_schedules() $$,
    $$ values ('t-sec'::text, timestamptz '2030-03-01 05:00:02+00', null::bigint, false,
               '54000 payload of 8 bytes is larger than the 5 bytes allowed for topic "t.schedule"'::text) $$,
    'a tick that cannot enqueue: its error in its row');
select results_eq($$ select next_tick_at, last_tick_at, last_error from brooq.schedules where name = 't-sec' $$,
    $$ values (timestamptz '2030-03-01 05:00:04+00', timestamptz '2030-03-01 00:00:08+00',
               '54000 payload of 8 bytes is larger than the 5 bytes allowed for topic "t.schedule"'::text) $$,
    'skipped, the error kept in brooq.schedules');
select lives_ok($$ select brooq.alter_topic('t.schedule', max_payload_bytes => 1000) $$, 'the topic takes it again');
set local brooq.now = '2030-03-01 05:00:04.1+00';
select is((select count(*)::int from brooq.tick_schedules(max_ticks => 1) where created), 1, 'the next tick enqueues');
select is((select last_error from brooq.schedules where name = 't-sec'), null, 'and clears the error');
select is(brooq._schedule_tick('t-sec'), null, 'pg_cron''s tick leaves the workers'' schedule alone');
select ok(brooq.unschedule('t-sec'), 'unschedule it');

-- A producer can neither squat nor hold a tick --------------------------------------------
-- A tick's job carries no idempotency key: the schedule's row (which only brooq's
-- functions write or lock) makes each tick enqueue once. A producer's job with the key
-- the ticks once had is a job like any other, and the tick enqueues its own.

set local brooq.now = '2031-03-03 02:59:00+00';
select is(brooq.schedule('t-nightly-w', '0 3 * * *', 't.schedule', '{"n": 1}', ticker => 'workers'), null,
    'a nightly schedule the workers tick');
set local role brooq_producer;
select lives_ok($$ select brooq.enqueue('t.schedule', '{"x": 1}', idempotency_key => 'schedule:t-nightly-w:2031-03-03T03:00:00Z',
                                        available_at => '9999-01-01') $$,
    'a producer enqueues a far-off job under the key of the next tick');
select lives_ok($$ select brooq.enqueue_staged('00000000-0000-0000-0000-0000000000c3', 't.schedule', array['{"x": 2}']::jsonb[],
                                               array['schedule:t-nightly-w:2031-03-04T03:00:00Z']) $$,
    'and stages (never publishes) a job under the key of the tick after');
reset role;
set local brooq.now = '2031-03-03 03:00:00.3+00';
create temp table t_ticked on commit drop as select * from brooq.tick_schedules();
select results_eq(
    $$ select t.tick, t.created, t.error, j.payload, j.idempotency_key, j.available_at
         from t_ticked t left join brooq.job j on j.id = t.job_id $$,
    $$ values (timestamptz '2031-03-03 03:00:00+00', true, null::text, '{"n": 1}'::jsonb, null::text,
               timestamptz '2031-03-03 03:00:00.3+00') $$,
    'the squatted tick enqueues the schedule''s own job, ready now, with no key anyone could hold');
select results_eq(
    $$ select j.payload, s.last_tick_at, s.last_error from brooq.schedules s join brooq.job j on j.id = s.last_job_id
        where s.name = 't-nightly-w' $$,
    $$ values ('{"n": 1}'::jsonb, timestamptz '2031-03-03 03:00:00+00', null::text) $$,
    'brooq.schedules: the last job is the schedule''s, not the impostor');
set local brooq.now = '2031-03-04 03:00:00.2+00';
select results_eq($$ select tick, created, error from brooq.tick_schedules() $$,
    $$ values (timestamptz '2031-03-04 03:00:00+00', true, null::text) $$,
    'the tick whose old key a staged job holds enqueues its job (no 55P03, nothing owed)');
select is((select next_tick_at from brooq.schedules where name = 't-nightly-w'), '2031-03-05 03:00:00+00'::timestamptz,
    'and the schedule goes on');
select is((select count(*)::int from brooq.job where topic = 't.schedule' and payload = '{"n": 1}'
             and idempotency_key is null and created_at >= '2031-03-03'), 2, 'two ticks, two jobs of the schedule');
set local lock_timeout = '7s';
select is((select count(*)::int from brooq.tick_schedules()), 0, 'nothing more is due');
select is(current_setting('lock_timeout'), '7s', 'a tick bounds its own lock waits, and gives the caller''s setting back');
reset lock_timeout;
select ok(brooq.unschedule('t-nightly-w'), 'unschedule it');

-- pg_cron's tick, squatted the same way
insert into brooq.schedule (name, cron, topic, payload, priority, created_at, updated_at, ticker)
values ('t-nightly-c', '0 3 * * *', 't.schedule', '{"c": 1}', 0, now(), now(), 'pg_cron');
set local role brooq_producer;
select lives_ok($$ select brooq.enqueue('t.schedule', '{"x": 3}', idempotency_key => 'schedule:t-nightly-c:2031-03-05T03:00:00Z',
                                        available_at => '9999-01-01') $$,
    'a producer squats the key of pg_cron''s next tick');
reset role;
set local brooq.now = '2031-03-05 03:00:00.5+00';
select brooq._schedule_tick('t-nightly-c') as cron_job \gset
select results_eq(format($$ select payload, idempotency_key from brooq.job where id = %s $$, :cron_job),
    $$ values ('{"c": 1}'::jsonb, null::text) $$, 'pg_cron''s tick enqueues the schedule''s own job');
set local brooq.now = '2031-03-05 03:00:59+00';
select is(brooq._schedule_tick('t-nightly-c'), :cron_job::bigint, 'a second run within the tick: the same job, nothing more');
set local brooq.now = '2031-03-05 02:59:59+00';
select is(brooq._schedule_tick('t-nightly-c'), null, 'a run for a tick before the last one (a clock set back): nothing');
select is((select count(*)::int from brooq.job where topic = 't.schedule' and payload = '{"c": 1}'), 1, 'one job for the tick');
select ok(brooq.unschedule('t-nightly-c'), 'unschedule it');

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
select throws_ok($$ select brooq.schedule('t-bad', 'every tuesday', 't.schedule', ticker => 'pg_cron') $$, '22023',
    'invalid schedule: every tuesday', 'a schedule pg_cron rejects is 22023');
select is((select count(*)::int from brooq.schedules where name = 't-bad'), 0, 'and nothing is written');
select is(brooq.schedule('t-nightly', '30 4 * * *', 't.schedule', ticker => 'workers'), null,
    'the same schedule moved to the workers');
select is((select count(*)::int from cron.job where jobname = 'brooq_schedule.t-nightly'), 0, 'its pg_cron job is gone');
select results_eq($$ select ticker, next_tick_at is not null from brooq.schedules where name = 't-nightly' $$,
    $$ values ('workers'::text, true) $$, 'and the workers owe its next tick');
select is(brooq.schedule('t-seconds', '*/10 * * * * *', 't.schedule'), null,
    'six fields, which pg_cron cannot run: the workers, by default');
select is((select ticker from brooq.schedules where name = 't-seconds'), 'workers', 'brooq.schedules says so');
select brooq.schedule('t-halfmin', '30 seconds', 't.schedule') as halfmin \gset
select is((select ticker from brooq.schedules where name = 't-halfmin'),
    (select case when string_to_array(split_part(extversion, '-', 1), '.')::int[] >= array[1, 5]
                 then 'pg_cron' else 'workers' end from pg_extension where extname = 'pg_cron'),
    '''30 seconds'': pg_cron from 1.5, the workers on pg_cron 1.4 (no seconds)');
select ok(brooq.unschedule('t-nightly'), 'unschedule');
select lives_ok($$ drop extension pg_cron $$, 'drop pg_cron (inside the rolled-back transaction)');

\else

select skip('pg_cron is not installed in this database', 13);

\endif

-- Errors -------------------------------------------------------------------------------------

select throws_ok($$ select brooq.schedule('t-x', '* * * * *', 't.schedule', ticker => 'pg_cron') $$, '55000',
    'pg_cron is not installed in database "' || current_database() || '"', 'ticker pg_cron without pg_cron: 55000');
select is(brooq.schedule('t-auto', '* * * * *', 't.schedule'), null, 'without pg_cron the workers tick it: no pg_cron job');
select is((select ticker from brooq.schedules where name = 't-auto'), 'workers', 'and brooq.schedules says so');
select throws_ok($$ select brooq.schedule('Bad Name', '* * * * *', 't.schedule') $$, '22023',
    'invalid schedule name "Bad Name"', 'a bad name is 22023');
select throws_ok($$ select brooq.schedule('t-x', '* * * * *', 't.nope') $$, '42704',
    'topic "t.nope" does not exist', 'an unknown topic is 42704');
select throws_ok($$ select brooq.schedule('t-x', null, 't.schedule') $$, '22004',
    'brooq.schedule: name, cron, topic, payload and priority must not be NULL', 'a NULL schedule is 22004');
select throws_ok(format($$ select brooq.schedule('t-x', %L, 't.schedule') $$, repeat('* ', 60)), '22023',
    'invalid schedule "' || left(repeat('* ', 60), 40) || '...": longer than 100 characters', 'an overlong schedule is 22023');
select throws_ok($$ select brooq.schedule('t-x', '* * * * *', 't.schedule', ticker => 'cron') $$, '22023',
    'invalid ticker "cron"', 'an unknown ticker is 22023');
select throws_ok($$ select brooq.schedule('t-x', 'every tuesday', 't.schedule', ticker => 'workers') $$, '22023',
    'invalid schedule "every tuesday": 2 fields', 'a schedule the workers cannot read is 22023');
select throws_ok($$ select brooq.schedule('t-x', '0 0 30 2 *', 't.schedule', ticker => 'workers') $$, '22023',
    'invalid schedule "0 0 30 2 *": it never fires', 'a schedule that never fires is 22023');
select throws_ok($$ select brooq.schedule('t-x', '61 * * * *', 't.schedule', ticker => 'workers') $$, '22023',
    'invalid schedule: "61" is not a minute field (0 to 59)', 'a field out of range is 22023');
select throws_ok($$ select brooq.schedule('t-x', '90 seconds', 't.schedule', ticker => 'workers') $$, '22023',
    'invalid schedule "90 seconds": a step of 1 to 59 seconds', 'a step over 59 seconds is 22023');
select throws_ok($$ select * from brooq.tick_schedules(0) $$, '22023',
    'max_ticks must be between 1 and 10000, not 0', 'max_ticks 0 is 22023');
select throws_ok($$ select * from brooq.tick_schedules(null) $$, '22004',
    'brooq.tick_schedules: max_ticks must not be NULL', 'max_ticks NULL is 22004');

select * from finish();
rollback;
