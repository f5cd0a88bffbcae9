-- Workflows (docs/architecture.md, "Workflows"): enqueue(..., after, after_policy) and
-- enqueue_many's edges (after_child, after_parent); the state waiting, which no claim
-- reads; the settle that finishes the last parent makes the child pending in the
-- same transaction; policies for a dead or canceled parent (cancel, transitively;
-- run); every terminal write releases (settle, settle_many, cancel, reap, flush);
-- purge, flush and retain_done => false keep a parent a waiting child needs;
-- re-drive; errors. The races: tests/test_sql_races.py.
begin;
select plan(158);

set local brooq.now = '2030-01-01 00:00:00+00';
select lives_ok($$ select brooq.declare_topic('w.a', max_attempts => 1) $$, 'a topic');
select lives_ok($$ select brooq.declare_topic('w.b', max_attempts => 1) $$, 'another topic');
select lives_ok($$ select brooq.declare_topic('w.c') $$, 'a third');

-- Structure ------------------------------------------------------------------------------

select has_table('brooq', 'job_edge', 'brooq.job_edge holds the edges');
select col_is_pk('brooq', 'job_edge', array['parent', 'child'], 'one edge per (parent, child)');
select has_index('brooq', 'job_edge', 'job_edge_child_idx', array['child', 'parent'], 'a child''s parents by index');
select has_column('brooq', 'job', 'after_policy', 'brooq.job.after_policy');
select has_column('brooq', 'job', 'parents_left', 'brooq.job.parents_left');
select hasnt_column('brooq', 'job', 'has_children', 'a job''s children are its edges, no column a child''s enqueue would write');

-- fan-in: the child waits, no claim reads it, the last parent's settle makes it pending ------

select id as p1 from brooq.enqueue('w.a', '{"p": 1}') \gset
select id as p2 from brooq.enqueue('w.a', '{"p": 2}') \gset
select id as c from brooq.enqueue('w.b', '{"c": 1}', after => array[:p1, :p2, :p1]::bigint[]) \gset
select results_eq(format($$ select state::text, parents_left, after_policy from brooq.job where id = %s $$, :c),
    $$ values ('waiting', 2, 'cancel') $$, 'a job with two parents not finished waits for 2 (a repeat counts once); the policy defaults to cancel');
select results_eq(format($$ select child from brooq.job_edge_check $$),
    format($$ values (%s::bigint) $$, :c), 'a child of parents not finished yet is noted: a reap counts an end its settle could not see');
select results_eq(format($$ select parent, settled from brooq.job_edge where child = %s order by parent $$, :c),
    format($$ values (%s::bigint, false), (%s, false) $$, :p1, :p2), 'one edge per parent, not settled');
select is_empty($$ select * from brooq.claim('w', array['w.b'], 10, '1 hour') $$, 'a waiting job is never claimed');
select results_eq($$ select waiting, pending from brooq.topic_stats where topic = 'w.b' $$,
    $$ values (1::bigint, 0::bigint) $$, 'topic_stats counts it waiting, not pending');
select set_eq($$ select id from brooq.claim('w', array['w.a'], 10, '1 hour') $$, array[:p1::bigint, :p2::bigint],
    'its parents are');
select is(brooq.settle(:p1, 'w', (select lease_token from brooq.job where id = :p1), 'done', result => '{"r": 1}')::text,
    'done', 'the first parent is done');
select results_eq(format($$ select state::text, parents_left from brooq.job where id = %s $$, :c),
    $$ values ('waiting', 1) $$, 'the child waits for one more');
set local brooq.now = '2030-01-01 00:01:00+00';
select is(brooq.settle(:p2, 'w', (select lease_token from brooq.job where id = :p2), 'done', result => '{"r": 2}')::text,
    'done', 'the second parent is done');
select results_eq(format($$ select state::text, parents_left, available_at from brooq.job where id = %s $$, :c),
    $$ values ('pending', 0, '2030-01-01 00:01:00+00'::timestamptz) $$,
    'the settle of the last parent made the child pending, available from that instant');
select is((select bool_and(settled) from brooq.job_edge where child = :c), true, 'both edges are settled');
select results_eq($$ select id from brooq.claim('w', array['w.b'], 10, '1 hour') $$, array[:c::bigint],
    'the child is claimed');
select results_eq(format($$ select p.id, p.result from brooq.job_edge e join brooq.job p on p.id = e.parent
                            where e.child = %s order by p.id $$, :c),
    format($$ values (%s::bigint, '{"r": 1}'::jsonb), (%s, '{"r": 2}') $$, :p1, :p2),
    'its parents'' results, read through its edges');
select results_eq(format($$ select id, state::text, result from brooq.parents(%s) $$, :c),
    format($$ values (%s::bigint, 'done', '{"r": 1}'::jsonb), (%s, 'done', '{"r": 2}') $$, :p1, :p2),
    'brooq.parents: the same, in one call');
select is_empty(format($$ select * from brooq.parents(%s) $$, :p1), 'brooq.parents of a job without parents: no rows');
select throws_ok($$ select * from brooq.parents(null) $$, '22004', 'brooq.parents: job_id must not be NULL',
    'brooq.parents(NULL): 22004');
select lives_ok(format($$ select brooq.settle(%s, 'w', (select lease_token from brooq.job where id = %s), 'done') $$, :c, :c),
    'and settled');

-- no parents, finished parents ----------------------------------------------------------------

select id as none from brooq.enqueue('w.b', '{}', after => '{}') \gset
select results_eq(format($$ select state::text, after_policy from brooq.job where id = %s $$, :none),
    $$ values ('pending', null::text) $$, 'after => ''{}'' is no parents');
select id as late from brooq.enqueue('w.b', '{}', after => array[:p1]::bigint[]) \gset
select results_eq(format($$ select state::text, parents_left from brooq.job where id = %s $$, :late),
    $$ values ('pending', 0) $$, 'a parent already done counts as finished: the child is pending at once');
select results_eq(format($$ select state::text, result, updated_at from brooq.job where id = %s $$, :p1),
    $$ values ('done', '{"r": 1}'::jsonb, '2030-01-01 00:00:00+00'::timestamptz) $$,
    'a child''s enqueue writes nothing of its parent''s outcome (state, result, updated_at)');

-- a fan-out with settle_many: one call finishes many parents of one child -------------------

select array_agg(id order by id) as ps from brooq.enqueue_many('w.a', array_fill('{}'::jsonb, array[5])) \gset
select id as fan from brooq.enqueue('w.b', '{}', after => :'ps'::bigint[]) \gset
select is((select parents_left from brooq.job where id = :fan), 5, 'a child of five');
select is((select count(*)::int from brooq.claim('w', array['w.a'], 10, '1 hour')), 5, 'the five claimed');
select is((select count(*)::int from brooq.settle_many('w', :'ps'::bigint[],
                (select array_agg(lease_token order by id) from brooq.job where id = any(:'ps'::bigint[])),
                array_fill('done'::text, array[5]))), 5, 'settle_many finishes the five in one call');
select results_eq(format($$ select state::text, parents_left from brooq.job where id = %s $$, :fan),
    $$ values ('pending', 0) $$, 'the child is pending once, its counter at 0');

-- policies: cancel (transitively) and run -----------------------------------------------------

select id as d1 from brooq.enqueue('w.a', '{"d": 1}') \gset
select id as d2 from brooq.enqueue('w.a', '{"d": 2}') \gset
select id as kid from brooq.enqueue('w.b', '{}', after => array[:d1, :d2]::bigint[]) \gset
select id as grandkid from brooq.enqueue('w.b', '{}', after => array[:kid]::bigint[]) \gset
select id as runner from brooq.enqueue('w.b', '{}', after => array[:d1, :d2]::bigint[], after_policy => 'run') \gset
select id as runner_kid from brooq.enqueue('w.b', '{}', after => array[:kid]::bigint[], after_policy => 'run') \gset
select is((select count(*)::int from brooq.claim('w', array['w.a'], 10, '1 hour')), 2, 'd1 and d2 claimed');
select is(brooq.settle(:d1, 'w', (select lease_token from brooq.job where id = :d1), 'dead', error => 'bad')::text,
    'dead', 'd1 dies');
select results_eq(format($$ select state::text, parents_left, last_error from brooq.job where id = %s $$, :kid),
    format($$ values ('canceled', 1, 'parent job %s ended dead (after_policy cancel)') $$, :d1),
    'under cancel, the child is canceled at once, the cause named, though d2 still runs');
select results_eq(format($$ select state::text, last_error from brooq.job where id = %s $$, :grandkid),
    format($$ values ('canceled', 'parent job %s ended canceled (after_policy cancel)') $$, :kid),
    'and so is its own waiting child, transitively');
select results_eq(format($$ select state::text, parents_left from brooq.job where id = %s $$, :runner_kid),
    $$ values ('pending', 0) $$, 'a child of the canceled child under run counts its parent finished');
select results_eq(format($$ select state::text, parents_left from brooq.job where id = %s $$, :runner),
    $$ values ('waiting', 1) $$, 'under run, the dead parent counts as finished: it waits for d2');
select is(brooq.settle(:d2, 'w', (select lease_token from brooq.job where id = :d2), 'cancel')::text,
    'canceled', 'd2 ends canceled');
select results_eq(format($$ select state::text, parents_left from brooq.job where id = %s $$, :runner),
    $$ values ('pending', 0) $$, 'the run child runs once all its parents have finished, whatever their outcome');
select results_eq(format($$ select state::text, parents_left from brooq.job where id = %s $$, :kid),
    $$ values ('canceled', 0) $$, 'the canceled child still counts its parents (parents_left 0), its state unchanged');
select id as born from brooq.enqueue('w.b', '{}', after => array[:d1]::bigint[]) \gset
select results_eq(format($$ select state::text, last_error from brooq.job where id = %s $$, :born),
    format($$ values ('canceled', 'parent job %s ended dead (after_policy cancel)') $$, :d1),
    'a parent already dead at the enqueue: under cancel, the child is canceled at its birth');
select id as born_run from brooq.enqueue('w.b', '{}', after => array[:d1]::bigint[], after_policy => 'run') \gset
select results_eq(format($$ select state::text from brooq.job where id = %s $$, :born_run),
    $$ values ('pending') $$, 'under run, pending');

-- re-drive -----------------------------------------------------------------------------------------

select ok(brooq.retry(:kid), 'a child canceled by its parent''s end, re-driven ...');
select results_eq(format($$ select state::text from brooq.job where id = %s $$, :kid),
    $$ values ('pending') $$, '... is pending: all its parents have finished (an admin''s act)');
select id as ra from brooq.enqueue('w.c', '{}') \gset
select id as rb from brooq.enqueue('w.c', '{}', available_at => '2031-01-01') \gset
select id as rx from brooq.enqueue('w.b', '{}', after => array[:ra, :rb]::bigint[], after_policy => 'run') \gset
select id as ry from brooq.enqueue('w.b', '{}', after => array[:rb]::bigint[]) \gset
select results_eq($$ select id from brooq.claim('w', array['w.c'], 10, '1 hour') $$, array[:ra::bigint], 'ra claimed');
select is(brooq.settle(:ra, 'w', (select lease_token from brooq.job where id = :ra), 'dead', error => 'bad')::text,
    'dead', 'ra dies');
select ok(brooq.retry(:ra), 'the dead parent re-driven');
select results_eq($$ select id from brooq.claim('w', array['w.c'], 10, '1 hour') $$, array[:ra::bigint], 'ra claimed again');
select is(brooq.settle(:ra, 'w', (select lease_token from brooq.job where id = :ra), 'done')::text, 'done', 'ra done');
select results_eq(format($$ select state::text, parents_left from brooq.job where id = %s $$, :rx),
    $$ values ('waiting', 1) $$, 'its second end is not counted again (its edge was settled): rx still waits for rb');
select ok(brooq.cancel(:ry), 'a waiting child canceled by an admin');
select ok(brooq.retry(:ry), 're-driven');
select results_eq(format($$ select state::text, parents_left from brooq.job where id = %s $$, :ry),
    $$ values ('waiting', 1) $$, 'waits again: its parent has not finished');

-- cancel of a waiting job, and of a parent --------------------------------------------------------

select id as q from brooq.enqueue('w.a', '{}') \gset
select id as w1 from brooq.enqueue('w.b', '{}', after => array[:q]::bigint[]) \gset
select id as w2 from brooq.enqueue('w.b', '{}', after => array[:w1]::bigint[]) \gset
select ok(brooq.cancel(:w1), 'cancel takes a waiting job');
select results_eq(format($$ select id, state::text from brooq.job where id in (%s, %s) order by id $$, :w1, :w2),
    format($$ values (%s::bigint, 'canceled'), (%s, 'canceled') $$, :w1, :w2), 'and its waiting children follow');
select id as w3 from brooq.enqueue('w.b', '{}', after => array[:q]::bigint[]) \gset
select ok(brooq.cancel(:q), 'cancel of a pending parent');
select is((select state::text from brooq.job where id = :w3), 'canceled', 'cancels its child');
select is((select parents_left from brooq.job where id = :w1), 0, 'and is counted in the child canceled before it');

-- reap: a parent made dead by its lease losses --------------------------------------------------

select lives_ok($$ select brooq.declare_topic('w.r', max_lease_losses => 1) $$, 'a topic of one lease loss');
select id as rp from brooq.enqueue('w.r', '{}') \gset
select id as rk from brooq.enqueue('w.b', '{}', after => array[:rp]::bigint[]) \gset
select is((select count(*)::int from brooq.claim('w', array['w.r'], 1, '1 second')), 1, 'claimed on a 1 s lease');
set local brooq.now = '2030-01-01 00:02:00+00';
select results_eq($$ select id from brooq.reap() $$, array[:rp::bigint], 'reaped');
select results_eq(format($$ select state::text from brooq.job where id in (%s, %s) order by id $$, :rp, :rk),
    $$ values ('dead'), ('canceled') $$, 'the reap that makes the parent dead cancels its child');

-- enqueue_many: an edge list, earlier elements by -k ------------------------------------------------

select id as root from brooq.enqueue('w.a', '{}') \gset
select array_agg(id order by ord) as many from brooq.enqueue_many('w.b', array_fill('{}'::jsonb, array[4]),
        after_child => array[1, 2, 3, 4, 4], after_parent => array[:root, -1, -1, -2, -3]::bigint[])
        with ordinality as e(id, created, ord) \gset
select results_eq(format($$ select state::text, parents_left, exists (select from brooq.job_edge e where e.parent = j.id)
                              from brooq.job j where id = any(%L::bigint[]) order by id $$, :'many'),
    $$ values ('waiting', 1, true), ('waiting', 1, true), ('waiting', 1, true), ('waiting', 2, false) $$,
    'a diamond in one call: each element waits for its parents, earlier elements have children');
select is((select count(*)::int from brooq.job_edge where child = any(:'many'::bigint[])), 5, 'five edges');
select is((select count(*)::int from brooq.claim('w', array['w.a'], 10, '1 hour')), 1, 'the root claimed');
select lives_ok(format($$ select brooq.settle(%s, 'w', (select lease_token from brooq.job where id = %s), 'done') $$, :root, :root),
    'the root done');
select results_eq(format($$ select state::text from brooq.job where id = any(%L::bigint[]) order by id $$, :'many'),
    $$ values ('pending'), ('waiting'), ('waiting'), ('waiting') $$, 'the first element is ready');
select array_agg(id order by ord) as chain from brooq.enqueue_many('w.b', array_fill('{}'::jsonb, array[3]),
        after_child => array[1, 2, 3], after_parent => array[:rp, -1, -2]::bigint[])
        with ordinality as e(id, created, ord) \gset
select results_eq(format($$ select state::text, last_error from brooq.job where id = any(%L::bigint[]) order by id $$, :'chain'),
    format($$ values ('canceled', 'parent job %s ended dead (after_policy cancel)'),
                     ('canceled', 'parent job %s ended canceled (after_policy cancel)'),
                     ('canceled', 'parent job %s ended canceled (after_policy cancel)') $$,
           :rp, (:'chain'::bigint[])[1], (:'chain'::bigint[])[2]),
    'a chain in one call on a dead parent: canceled at birth, transitively');

-- purge, flush and retain_done keep a parent a waiting child needs -----------------------------

select lives_ok($$ select brooq.declare_topic('w.k', retention => '1 second', retain_done => false) $$,
    'a topic that keeps no done job');
select id as kp from brooq.enqueue('w.k', '{}') \gset
select id as kc from brooq.enqueue('w.k', '{}', after => array[:kp]::bigint[], available_at => '2031-01-01') \gset
select is((select count(*)::int from brooq.claim('w', array['w.k'], 10, '1 hour')), 1, 'the parent claimed');
select is(brooq.settle(:kp, 'w', (select lease_token from brooq.job where id = :kp), 'done', result => '{"kept": true}')::text,
    'done', 'settled done');
select is((select result from brooq.job where id = :kp), '{"kept": true}'::jsonb,
    'retain_done => false: a parent is kept, its result stored, for its child');
set local brooq.now = '2030-01-02 00:00:00+00';
select lives_ok($$ select brooq.purge() $$, 'purge runs');
select is((select count(*)::int from brooq.job where id = :kp), 1, 'purge keeps a parent whose child has not finished');
select is(brooq.flush('w.k', array['done']), 0::bigint, 'so does flush of finished jobs');
select ok(brooq.cancel(:kc), 'the child ends');
set local brooq.now = '2030-01-03 00:00:00+00';
select lives_ok($$ select brooq.purge() $$, 'purge runs again');
select is((select count(*)::int from brooq.job where id in (:kp, :kc)), 0, 'the parent and the child are gone');
select is((select count(*)::int from brooq.job_edge where child = :kc), 0, 'and the child''s edges');

select id as fp from brooq.enqueue('w.k', '{}') \gset
select id as fc from brooq.enqueue('w.b', '{}', after => array[:fp]::bigint[]) \gset
select is(brooq.flush('w.k'), 1::bigint, 'flush deletes a pending parent');
select results_eq(format($$ select state::text, last_error from brooq.job where id = %s $$, :fc),
    format($$ values ('canceled', 'parent job %s ended canceled (after_policy cancel)') $$, :fp),
    'its child counts it canceled');

-- the claim hands a child its parents; children(); a job without parents pays nothing --------

select lives_ok($$ select brooq.declare_topic('w.claim') $$, 'a topic for the claim''s parents');
select id as cp1 from brooq.enqueue('w.claim', '{"cp": 1}') \gset
select id as cp2 from brooq.enqueue('w.claim', '{"cp": 2}') \gset
select id as cc from brooq.enqueue('w.claim', '{}', after => array[:cp2, :cp1]::bigint[], after_policy => 'run') \gset
create temp table cpar on commit drop as select id, lease_token, parents from brooq.claim('w', array['w.claim'], 10);
select is((select count(*)::int from cpar where parents is null), 2, 'a claimed job without parents carries parents NULL');
select is((select count(*)::int from cpar where id = :cc), 0, 'the waiting child is not claimed');
select lives_ok(format($$ select brooq.settle(%s, 'w', %s, 'done', result => '{"r": 1}') $$, :cp1,
                       (select lease_token from cpar where id = :cp1)), 'one parent done, with a result');
select lives_ok(format($$ select brooq.settle(%s, 'w', %s, 'dead', error => 'boom') $$, :cp2,
                       (select lease_token from cpar where id = :cp2)), 'the other dead (policy run)');
select results_eq(
    format($$ select p
                from brooq.claim('w', array['w.claim'], 10) c, jsonb_array_elements(c.parents) p
               where c.id = %s $$, :cc),
    format($$ values (jsonb_build_object('id', %s, 'topic', 'w.claim', 'state', 'done')),
                     (jsonb_build_object('id', %s, 'topic', 'w.claim', 'state', 'dead')) $$, :cp1, :cp2),
    'the claim hands the child each parent''s id, topic and state, in id order, never a result');
select results_eq(format($$ select id, state::text, result, last_error from brooq.parents(%s) $$, :cc),
    format($$ values (%s::bigint, 'done', '{"r": 1}'::jsonb, null::text), (%s, 'dead', null, 'boom') $$, :cp1, :cp2),
    'brooq.parents reads their results and errors on request');
select results_eq(format($$ select id, state::text, parents_left, after_policy from brooq.children(%s) $$, :cp1),
    format($$ values (%s::bigint, 'processing', 0, 'run') $$, :cc), 'children(): the child, its state and parents left');
select is((select count(*)::int from brooq.children(:cc)), 0, 'a job without children has none');
select is((select count(*)::int from brooq.children(9999999)), 0, 'an unknown id has none');
select throws_ok($$ select * from brooq.children(null) $$, '22004', null, 'children: a NULL id, 22004');
select throws_ok($$ select * from brooq.children(1, 0) $$, '22023', 'invalid max_rows 0', 'children: max_rows out of range, 22023');

-- groups: a waiting job holds its group's place ------------------------------------------------

select lives_ok($$ select brooq.declare_topic('w.g') $$, 'a topic with groups');
select id as gp from brooq.enqueue('w.g', '{"gp": 1}') \gset
select id as gw from brooq.enqueue('w.g', '{"gw": 1}', group_key => 'g', after => array[:gp]::bigint[]) \gset
select id as gl from brooq.enqueue('w.g', '{"gl": 1}', group_key => 'g') \gset
select results_eq(format($$ select state::text, group_seq from brooq.job where id in (%s, %s) order by id $$, :gw, :gl),
    $$ values ('waiting', 1::bigint), ('pending', 2::bigint) $$, 'a job with parents and a group: waiting, first in its group');
select is((select held_by_group from brooq.topic_stats where topic = 'w.g'), 1::bigint,
    'topic_stats: the later job of the group is held back by the waiting one');
create temp table gc1 on commit drop as select id, lease_token from brooq.claim('w', array['w.g'], 10);
select results_eq($$ select id from gc1 $$, format($$ values (%s::bigint) $$, :gp),
    'a claim takes the parent, never the later job of the group the waiting one holds');
select lives_ok(format($$ select brooq.settle(%s, 'w', %s, 'done') $$, :gp, (select lease_token from gc1)), 'the parent done');
create temp table gc2 on commit drop as select id, lease_token from brooq.claim('w', array['w.g'], 10);
select results_eq($$ select id from gc2 $$, format($$ values (%s::bigint) $$, :gw),
    'then the released job, first of its group, and not yet the next one');
select lives_ok(format($$ select brooq.settle(%s, 'w', %s, 'done') $$, :gw, (select lease_token from gc2)), 'it is done');
select results_eq($$ select id from brooq.claim('w', array['w.g'], 10) $$, format($$ values (%s::bigint) $$, :gl),
    'then the group''s next job');
select id as gm from brooq.enqueue_many('w.g', array['{}', '{}', '{}']::jsonb[], group_keys => array[null, 'h', 'h'],
    after_child => array[2], after_parent => array[-1]) limit 1 \gset
select results_eq(format($$ select state::text, group_key, group_seq from brooq.job where id >= %s order by id $$, :gm),
    $$ values ('pending', null, null), ('waiting', 'h', 1::bigint), ('pending', 'h', 2::bigint) $$,
    'enqueue_many: edges and groups together');
select results_eq(format($$ select id from brooq.claim('w', array['w.g'], 10) $$),
    format($$ values (%s::bigint) $$, :gm), 'the group h waits behind its waiting first job');

-- re-drive with rearm_children: the children a parent's end canceled wait for it again --------

select lives_ok($$ select brooq.declare_topic('w.rp', max_attempts => 1) $$, 'a topic of parents');
select lives_ok($$ select brooq.declare_topic('w.rc') $$, 'a topic of children');
select id as rp from brooq.enqueue('w.rp', '{}') \gset
select id as rq from brooq.enqueue('w.rp', '{}') \gset
select id as rk from brooq.enqueue('w.rc', '{}', after => array[:rp, :rq]::bigint[]) \gset
select id as rg from brooq.enqueue('w.rc', '{}', after => array[:rk]::bigint[]) \gset
select id as rh from brooq.enqueue('w.rc', '{}', after => array[:rp]::bigint[]) \gset
select ok(brooq.cancel(:rh), 'a child canceled by hand');
select is((select count(*)::int from brooq.claim('w', array['w.rp'], 10, '1 hour')), 2, 'both parents claimed');
select lives_ok(format($$ select brooq.settle(%s, 'w', %s, 'done'), brooq.settle(%s, 'w', %s, 'dead', error => 'bad') $$,
    :rq, (select lease_token from brooq.job where id = :rq), :rp, (select lease_token from brooq.job where id = :rp)),
    'one parent done, the other dead');
select results_eq(format($$ select id, state::text, canceled_by from brooq.job where id in (%s, %s, %s) order by id $$, :rk, :rg, :rh),
    format($$ values (%s::bigint, 'canceled', %s::bigint), (%s, 'canceled', %s), (%s, 'canceled', null) $$, :rk, :rp, :rg, :rk, :rh),
    'canceled_by names the parent (or the canceled ancestor); NULL for a cancel by hand');
select ok(brooq.retry(:rp), 're-driven without rearm_children ...');
select results_eq(format($$ select state::text from brooq.job where id = %s $$, :rk), $$ values ('canceled') $$,
    '... its children stay canceled (the default)');
select is((select count(*)::int from brooq.claim('w', array['w.rp'], 10, '1 hour')), 1, 'the parent claimed again');
select lives_ok(format($$ select brooq.settle(%s, 'w', %s, 'dead', error => 'bad') $$, :rp, (select lease_token from brooq.job where id = :rp)),
    'and dead again');
select ok(brooq.retry(:rp, rearm_children => true), 're-driven with rearm_children');
select results_eq(format($$ select id, state::text, parents_left, canceled_by from brooq.job where id in (%s, %s, %s) order by id $$, :rk, :rg, :rh),
    format($$ values (%s::bigint, 'waiting', 1, null::bigint), (%s, 'waiting', 1, null), (%s, 'canceled', 0, null) $$, :rk, :rg, :rh),
    'its child waits for it again, and so does the grandchild; the child canceled by hand does not');
select matches((select last_error from brooq.job where id = :rk), format('^re-armed: parent job %s re-driven by ', :rp),
    'last_error says who re-armed it');
select matches((select last_error from brooq.job where id = :rg), format('^re-armed: parent job %s re-armed by ', :rk),
    'the grandchild''s says its parent was re-armed, not re-driven');
select is((select count(*)::int from brooq.claim('w', array['w.rc'], 10, '1 hour')), 0, 'nothing of theirs is claimable yet');
select is((select count(*)::int from brooq.claim('w', array['w.rp'], 10, '1 hour')), 1, 'the parent claimed a third time');
select lives_ok(format($$ select brooq.settle(%s, 'w', %s, 'done') $$, :rp, (select lease_token from brooq.job where id = :rp)),
    'and done');
select results_eq(format($$ select state::text, parents_left from brooq.job where id = %s $$, :rk), $$ values ('pending', 0) $$,
    'the re-armed child is pending once its parents are done');
select id as rm_a from brooq.enqueue('w.rp', '{}') \gset
select id as rm_b from brooq.enqueue('w.rp', '{}') \gset
select id as rm from brooq.enqueue('w.rc', '{}', after => array[:rm_a, :rm_b]::bigint[]) \gset
select is((select count(*)::int from brooq.claim('w', array['w.rp'], 10, '1 hour')), 2, 'two more parents');
select lives_ok(format($$ select brooq.settle(%s, 'w', %s, 'dead', error => 'bad'), brooq.settle(%s, 'w', %s, 'dead', error => 'bad') $$,
    :rm_a, (select lease_token from brooq.job where id = :rm_a), :rm_b, (select lease_token from brooq.job where id = :rm_b)),
    'both dead');
select ok(brooq.retry(:rm_a, rearm_children => true), 'one re-driven with rearm_children');
select results_eq(format($$ select state::text, canceled_by, last_error from brooq.job where id = %s $$, :rm),
    format($$ values ('canceled', %s::bigint, 'parent job %s ended dead (after_policy cancel)') $$, :rm_b, :rm_b),
    'a child another dead parent still cancels stays canceled, now in that parent''s name');
select ok(brooq.retry(:rm_b, rearm_children => true), 'the other re-driven with rearm_children');
select results_eq(format($$ select state::text, parents_left from brooq.job where id = %s $$, :rm), $$ values ('waiting', 2) $$,
    'now it waits for both');
-- a parent re-driven earlier, without the child, counts as unfinished when the child is re-armed
select lives_ok($$ select brooq.declare_topic('w.rs', max_attempts => 1) $$, 'a topic for the recount');
select id as sa from brooq.enqueue('w.rs', '{}') \gset
select id as sb from brooq.enqueue('w.rs', '{}') \gset
select id as sq from brooq.enqueue('w.rs', '{}') \gset
select id as sc from brooq.enqueue('w.rc', '{}', after => array[:sa, :sb, :sq]::bigint[]) \gset
select is((select count(*)::int from brooq.claim('w', array['w.rs'], 10, '1 hour')), 3, 'three parents claimed');
select lives_ok(format($$ select brooq.settle(%s, 'w', %s, 'dead', error => 'bad'), brooq.settle(%s, 'w', %s, 'dead', error => 'bad') $$,
    :sa, (select lease_token from brooq.job where id = :sa), :sb, (select lease_token from brooq.job where id = :sb)),
    'two of them dead, the third still running');
select ok(brooq.retry(:sb, rearm_children => true), 'the second re-driven: its child was canceled by the first');
select results_eq(format($$ select state::text, canceled_by from brooq.job where id = %s $$, :sc),
    format($$ values ('canceled', %s::bigint) $$, :sa), 'the child stays canceled, in the first''s name');
select ok(brooq.retry(:sa, rearm_children => true), 'the first re-driven with rearm_children');
select results_eq(format($$ select state::text, parents_left from brooq.job where id = %s $$, :sc), $$ values ('waiting', 3) $$,
    'the child waits for all three: the second, re-driven before, has not ended again');
select results_eq(format($$ select count(*)::int from brooq.job_edge where child = %s and not settled $$, :sc), $$ values (3) $$,
    'none of its edges settled');

-- a child under after_policy run that still waits waits for a re-driven parent's new end
select lives_ok($$ select brooq.declare_topic('w.rt', max_attempts => 1) $$, 'a topic of parents of a batch');
select id as ta from brooq.enqueue('w.rt', '{}') \gset
select id as tb from brooq.enqueue('w.rt', '{}') \gset
select id as tc from brooq.enqueue('w.rc', '{}', after => array[:ta, :tb]::bigint[], after_policy => 'run') \gset
select is((select count(*)::int from brooq.claim('w', array['w.rt'], 10, '1 hour')), 2, 'both parents of the batch claimed');
select lives_ok(format($$ select brooq.settle(%s, 'w', %s, 'dead', error => 'bad') $$, :ta, (select lease_token from brooq.job where id = :ta)),
    'one dead: under run it counts as finished');
select results_eq(format($$ select state::text, parents_left from brooq.job where id = %s $$, :tc), $$ values ('waiting', 1) $$,
    'the batch''s child waits for the other');
select ok(brooq.retry(:ta), 'the dead parent re-driven (rearm_children left out)');
select results_eq(format($$ select state::text, parents_left from brooq.job where id = %s $$, :tc), $$ values ('waiting', 2) $$,
    'the child waits for its new end too');
select lives_ok(format($$ select brooq.settle(%s, 'w', %s, 'done') $$, :tb, (select lease_token from brooq.job where id = :tb)),
    'the other parent done');
select results_eq(format($$ select state::text, parents_left from brooq.job where id = %s $$, :tc), $$ values ('waiting', 1) $$,
    'the child does not run beside the re-driven parent');
select is((select count(*)::int from brooq.claim('w', array['w.rt'], 10, '1 hour')), 1, 'the re-driven parent claimed');
select lives_ok(format($$ select brooq.settle(%s, 'w', %s, 'done') $$, :ta, (select lease_token from brooq.job where id = :ta)),
    'and done');
select results_eq(format($$ select state::text, parents_left from brooq.job where id = %s $$, :tc), $$ values ('pending', 0) $$,
    'now the child is ready');
select throws_ok($$ select brooq.retry(1, rearm_children => null) $$, '22004', null, 'rearm_children NULL: 22004');

-- errors -----------------------------------------------------------------------------------------

select throws_ok($$ select brooq.enqueue('w.b', '{}', after => array[9999999]::bigint[]) $$,
    '23503', 'parent job 9999999 does not exist', 'an unknown parent: 23503, named');
select throws_ok($$ select brooq.enqueue('w.b', '{}', after => array[null]::bigint[]) $$,
    '22004', 'brooq.enqueue: after holds a NULL parent id', 'a NULL parent id: 22004');
select throws_ok(format($$ select brooq.enqueue('w.b', '{}', after => array[%s]::bigint[], after_policy => 'maybe') $$, :p1),
    '22023', 'unknown after_policy "maybe"', 'an unknown policy: 22023');
select throws_ok($$ select brooq.enqueue('w.b', '{}', after => array(select generate_series(1, 10001)::bigint)) $$,
    '54000', 'brooq.enqueue: 10001 parents, more than 10000', 'more than 10000 parents: 54000');
select throws_ok($$ select brooq.enqueue_many('w.b', array['{}', '{}']::jsonb[], after_child => array[1], after_parent => array[-2]::bigint[]) $$,
    '22023', 'edge 1: element 1 cannot wait for -2', 'an element may wait only for an earlier one: no cycle');
select throws_ok($$ select brooq.enqueue_many('w.b', array['{}']::jsonb[], after_child => array[1, 1], after_parent => array[1]::bigint[]) $$,
    '22023', 'after_child has 2 elements, after_parent has 1', 'edge arrays of different lengths: 22023');
select throws_ok($$ select brooq.enqueue_many('w.b', array['{}']::jsonb[], after_child => array[null]::integer[], after_parent => array[1]::bigint[]) $$,
    '22004', 'edge 1 has a NULL after_child or after_parent', 'a NULL edge: 22004');
select throws_ok($$ select brooq.enqueue_many('w.b', array['{}']::jsonb[], after_child => array[1], after_parent => array[9999999]::bigint[]) $$,
    '23503', 'parent job 9999999 does not exist', 'enqueue_many: an unknown parent, 23503');
select throws_ok(format($$ select brooq.enqueue_many('w.b', array['{}']::jsonb[], idempotency_keys => array['k'],
                                after_child => array[1], after_parent => array[%s]::bigint[]) $$, :p1),
    '22023', 'brooq.enqueue_many: edges (after_child) with idempotency_keys', 'edges with idempotency keys: 22023');

select * from finish();
rollback;
