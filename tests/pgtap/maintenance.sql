-- brooq.schedule_maintenance and brooq.unschedule_maintenance: structure,
-- behaviour with pg_cron (idempotent registration, removal, errors) and
-- without it (55000, simulated by dropping pg_cron inside this rolled-back
-- transaction), then privileges under switched roles.
-- Where pg_cron is not installed at all (a BROOQ_TEST_DSN server), the pg_cron
-- tests are skipped and only the 55000 answers are checked.
begin;
select plan(25);

-- Structure -------------------------------------------------------------------

select has_function('brooq', 'schedule_maintenance', array['text', 'text']);
select function_returns('brooq', 'schedule_maintenance', array['text', 'text'], 'setof brooq.maintenance_job');
select is_definer('brooq', 'schedule_maintenance', array['text', 'text']);
select has_function('brooq', 'unschedule_maintenance', array[]::text[]);
select function_returns('brooq', 'unschedule_maintenance', array[]::text[], 'integer');
select is_definer('brooq', 'unschedule_maintenance', array[]::text[]);

-- Privileges (before any behaviour: they hold with or without pg_cron) --------------------

set local role brooq_worker;
select throws_ok($$ select brooq.schedule_maintenance() $$, '42501', 'permission denied for function schedule_maintenance',
    'brooq_worker cannot schedule maintenance');
select throws_ok($$ select brooq.unschedule_maintenance() $$, '42501', 'permission denied for function unschedule_maintenance',
    'brooq_worker cannot unschedule maintenance');
reset role;
set local role brooq_producer;
select throws_ok($$ select brooq.schedule_maintenance() $$, '42501', 'permission denied for function schedule_maintenance',
    'brooq_producer cannot schedule maintenance');
reset role;

-- Behaviour --------------------------------------------------------------------------

select to_regnamespace('cron') is not null as has_cron \gset
\if :has_cron

select results_eq(
    $$ select job_name, schedule from brooq.schedule_maintenance() $$,
    $$ values ('brooq_reap'::text, '* * * * *'::text), ('brooq_purge', '*/10 * * * *') $$,
    'schedule_maintenance registers brooq_reap and brooq_purge with the default schedules');
select results_eq(
    $$ select jobname::text collate "default", schedule::text, command::text, database::text, username::text, active
         from cron.job where jobname in ('brooq_reap', 'brooq_purge') order by jobname desc $$,
    $$ values ('brooq_reap'::text, '* * * * *'::text, 'select pg_catalog.count(*) from brooq.reap(10000)'::text, current_database()::text collate "default",
               (select nspowner::regrole::text from pg_namespace where nspname = 'brooq'), true),
              ('brooq_purge', '*/10 * * * *', 'call brooq.purge_all()', current_database()::text collate "default",
               (select nspowner::regrole::text from pg_namespace where nspname = 'brooq'), true) $$,
    'cron.job holds both jobs, in this database, run as the owner of brooq');
select jobid as reap_id from cron.job where jobname = 'brooq_reap' \gset
set local role brooq_admin;
select results_eq(
    $$ select job_name, schedule from brooq.schedule_maintenance(reap_schedule => '*/2 * * * *', purge_schedule => '0 3 * * *') $$,
    $$ values ('brooq_reap'::text, '*/2 * * * *'::text), ('brooq_purge', '0 3 * * *') $$,
    'brooq_admin can schedule again, with new schedules');
reset role;
select is((select count(*)::int from cron.job where jobname in ('brooq_reap', 'brooq_purge')), 2,
    'scheduling twice still gives 2 rows in cron.job (idempotent)');
select results_eq($$ select jobid, schedule::text from cron.job where jobname = 'brooq_reap' $$,
    format($$ values (%s::bigint, '*/2 * * * *'::text) $$, :reap_id), 'the same job, with its schedule updated');
select throws_ok($$ select brooq.schedule_maintenance(reap_schedule => null) $$, '22004',
    'brooq.schedule_maintenance: schedules must not be NULL', 'a NULL schedule is 22004');
select throws_ok($$ select brooq.schedule_maintenance(purge_schedule => 'every tuesday') $$, '22023',
    'invalid schedule: every tuesday', 'a schedule pg_cron rejects is 22023');
select is((select schedule::text from cron.job where jobname = 'brooq_purge'), '0 3 * * *', 'a rejected schedule changed nothing');
set local role brooq_admin;
select is(brooq.unschedule_maintenance(), 2, 'unschedule_maintenance removes both jobs and says 2');
reset role;
select is((select count(*)::int from cron.job where jobname in ('brooq_reap', 'brooq_purge')), 0, 'cron.job has none left');
select is(brooq.unschedule_maintenance(), 0, 'unscheduling again says 0');
select lives_ok($$ select brooq.schedule_maintenance() $$, 'schedule once more');

-- without pg_cron: drop it inside this transaction (rolled back at the end)
select lives_ok($$ drop extension pg_cron $$, 'drop pg_cron (inside the rolled-back transaction)');

\else

select skip('pg_cron is not installed in this database', 13);

\endif

select throws_ok($$ select brooq.schedule_maintenance() $$, '55000',
    format('pg_cron is not installed in database "%s"', current_database()),
    'without pg_cron, schedule_maintenance is 55000 and names the database');
select throws_ok($$ select brooq.unschedule_maintenance() $$, '55000',
    format('pg_cron is not installed in database "%s"', current_database()),
    'without pg_cron, unschedule_maintenance is 55000');
select throws_ok($$ select brooq.schedule_maintenance(null, null) $$, '22004', null,
    'a NULL schedule is 22004 even without pg_cron');

select * from finish();
rollback;
