-- brooq.drop_topic: structure, refused while jobs or schedules remain (55006, the
-- topic and how many named), force deletes them with the topic, what is kept for a
-- topic goes with it (flow_lock, job_group, claim_window, retention_stat), the topic
-- can be declared again, errors, then privileges under switched roles.
begin;
select plan(30);

select has_function('brooq', 'drop_topic', array['text', 'boolean']);
select function_returns('brooq', 'drop_topic', array['text', 'boolean'], 'bigint');
select is_definer('brooq', 'drop_topic', array['text', 'boolean']);

set local brooq.now = '2030-01-01 00:00:00+00';

-- An empty topic -----------------------------------------------------------------------

select lives_ok($$ select brooq.declare_topic('t.emial') $$, 'a typo''d topic');
select is(brooq.drop_topic('t.emial'), 0::bigint, 'an empty topic drops: no job deleted');
select is((select count(*)::int from brooq.topics where name = 't.emial'), 0, 'it is gone from brooq.topics');
select is((select count(*)::int from brooq.topic_stats where topic = 't.emial'), 0, 'and from brooq.topic_stats');
select is((select count(*)::int from brooq.flow_lock where topic = 't.emial'), 0, 'and its row of brooq.flow_lock');
select throws_ok($$ select brooq.drop_topic('t.emial') $$, '42704', 'topic "t.emial" does not exist',
    'dropping it again: 42704');

-- Jobs and schedules remain ------------------------------------------------------------

select lives_ok($$ select brooq.declare_topic('t.drop', rate => 10) $$, 'a topic with a rate');
select lives_ok($$ select brooq.enqueue('t.drop', '{}', group_key => 'g'), brooq.enqueue('t.drop', '{}') $$,
    'two jobs, one in a group');
select is((select count(*)::int from brooq.claim('w', array['t.drop'], max_jobs => 1)), 1,
    'one claimed (a row of claim_window)');
select throws_ok($$ select brooq.drop_topic('t.drop') $$, '55006', 'topic "t.drop" still has 2 jobs',
    'refused while jobs remain: 55006, naming the topic and how many');
select lives_ok($$ select brooq.schedule('t-drop-nightly', '0 3 * * *', 't.drop', ticker => 'workers') $$, 'a schedule of it');
select lives_ok($$ select brooq.flush('t.drop') $$, 'the waiting job flushed');
select throws_ok($$ select brooq.drop_topic('t.drop') $$, '55006', 'topic "t.drop" still has 1 job',
    'one job (processing) still refuses it');
select is(brooq.drop_topic('t.drop', force => true), 1::bigint, 'force: dropped, with its job');
select is((select count(*)::int from brooq.job where topic = 't.drop'), 0, 'no job of it is left');
select is((select count(*)::int from brooq.schedules where topic = 't.drop'), 0, 'nor its schedule');
select is((select count(*)::int from brooq.job_group where topic = 't.drop')
          + (select count(*)::int from brooq.claim_window where topic = 't.drop')
          + (select count(*)::int from brooq.flow_lock where topic = 't.drop'), 0,
    'nor its group numbers, claims or flow lock');
select lives_ok($$ select brooq.declare_topic('t.drop') $$, 'the name can be declared again');

select lives_ok($$ select brooq.schedule('t-drop-other', '0 3 * * *', 't.drop', ticker => 'workers') $$, 'a schedule alone');
select throws_ok($$ select brooq.drop_topic('t.drop') $$, '55006', 'topic "t.drop" has 1 schedule: t-drop-other',
    'a schedule refuses it too, named');

-- Workflows: a dropped topic's unfinished parent cancels its children elsewhere ----------

select lives_ok($$ select brooq.declare_topic('t.drop-wf'), brooq.declare_topic('t.drop-kid') $$, 'two topics');
select id as wf_parent from brooq.enqueue('t.drop-wf', '{}') \gset
select id as wf_child from brooq.enqueue('t.drop-kid', '{}', after => array[:wf_parent]::bigint[]) \gset
select id as wf_grandchild from brooq.enqueue('t.drop-kid', '{}', after => array[:wf_child]::bigint[]) \gset
select is(brooq.drop_topic('t.drop-wf', force => true), 1::bigint, 'force drops the topic with the pending parent');
select results_eq(format($$ select state::text, last_error from brooq.job where id in (%s, %s) order by id $$, :wf_child, :wf_grandchild),
    format($$ values ('canceled', 'parent job %s ended canceled (after_policy cancel)'),
                     ('canceled', 'parent job %s ended canceled (after_policy cancel)') $$, :wf_parent, :wf_child),
    'its waiting child in another topic is canceled, naming the dropped parent, and the grandchild too (never waiting forever)');
select is((select count(*)::int from brooq.job_edge where parent = :wf_parent and not settled), 0,
    'no unsettled edge of the dropped parent is left');
select is(brooq.drop_topic('t.drop-kid', force => true), 2::bigint, 'the children''s topic drops too');
select is((select count(*)::int from brooq.job_edge where child in (:wf_child, :wf_grandchild)), 0,
    'a dropped job takes its edges to its parents along');

-- Errors --------------------------------------------------------------------------------

select throws_ok($$ select brooq.drop_topic(null) $$, '22004', 'brooq.drop_topic: name and force must not be NULL',
    'a NULL name is 22004');

select * from finish();
rollback;
