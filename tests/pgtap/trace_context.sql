-- The W3C trace context a job carries beside its payload: enqueue and
-- enqueue_many store it in brooq.job.trace_context (checked by brooq._trace_context),
-- claim hands it back; a bad one is refused with 22023 and nothing is written.
begin;
select plan(27);

select has_column('brooq', 'job', 'trace_context', 'job has trace_context');
select col_type_is('brooq', 'job', 'trace_context', 'jsonb', 'trace_context is jsonb');
select col_is_null('brooq', 'job', 'trace_context', 'trace_context is nullable (no context)');
select has_function('brooq', '_trace_context', array['jsonb', 'text']);

select lives_ok($$ select brooq.declare_topic('t.trace') $$, 'declare the topic');

-- enqueue stores it ---------------------------------------------------------------

\set ctx '{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "tracestate": "congo=t61rcWkgMzE"}'
select id as j1 from brooq.enqueue('t.trace', '{"n": 1}', trace_context => :'ctx') \gset
select is((select trace_context from brooq.job where id = :j1), :'ctx'::jsonb,
    'enqueue stores the trace context as given');
select is((select payload from brooq.job where id = :j1), '{"n": 1}'::jsonb,
    'the payload is left alone (the context is beside it, not inside)');
select id as j2 from brooq.enqueue('t.trace', '{"n": 2}') \gset
select is((select trace_context from brooq.job where id = :j2), null, 'no trace_context: NULL');
select id as j3 from brooq.enqueue('t.trace', '{"n": 3}', trace_context => '{}') \gset
select is((select trace_context from brooq.job where id = :j3), null, '{} is no context: NULL');
select id as j4 from brooq.enqueue('t.trace', '{"n": 4}',
    trace_context => '{"traceparent": "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"}') \gset
select is((select trace_context ->> 'traceparent' from brooq.job where id = :j4),
    '01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00', 'a later version and no tracestate are accepted');

-- enqueue_many: one context for the batch, keyed or not --------------------------------

select array_agg(id) as m1 from brooq.enqueue_many('t.trace', array['{"m": 1}', '{"m": 2}']::jsonb[],
                                                   trace_context => :'ctx') \gset
select is((select count(*) from brooq.job where id = any(:'m1') and trace_context = :'ctx'::jsonb), 2::bigint,
    'enqueue_many without keys gives every job the trace context');
select array_agg(id) as m2 from brooq.enqueue_many('t.trace', array['{"m": 3}', '{"m": 4}']::jsonb[],
                                                   idempotency_keys => array['k3', 'k4'],
                                                   trace_context => :'ctx') \gset
select is((select count(*) from brooq.job where id = any(:'m2') and trace_context = :'ctx'::jsonb), 2::bigint,
    'enqueue_many with keys gives every job the trace context');

-- The W3C trace context a job carries beside its payload: enqueue and
-- enqueue_many store it in brooq.job.trace_context (checked by brooq._trace_context),
-- claim hands it back ---------------------------------------------------------------

select results_eq(
    $$ select id, trace_context from brooq.claim('w.trace', array['t.trace'], 10) where id in ($$ || :j1 || ',' || :j2 || ') order by id',
    format($$ values (%s::bigint, %L::jsonb), (%s, null) $$, :j1, :'ctx', :j2),
    'claim returns each job''s trace context (NULL when it has none)');

-- refused: 22023, nothing written ----------------------------------------------------

select is((select count(*) from brooq.job where topic = 't.trace'), 8::bigint, 'eight jobs so far');
select throws_ok($$ select brooq.enqueue('t.trace', '{}', trace_context => '"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"') $$,
    '22023', 'brooq.enqueue: trace_context "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" is not a W3C trace context',
    'a bare string is not a trace context');
select throws_ok($$ select brooq.enqueue('t.trace', '{}', trace_context => '{"traceparent": "00-0AF7651916CD43DD8448EB211C80319C-B7AD6B7169203331-01"}') $$,
    '22023', null, 'upper-case hex is refused');
select throws_ok($$ select brooq.enqueue('t.trace', '{}', trace_context => '{"traceparent": "00-00000000000000000000000000000000-b7ad6b7169203331-01"}') $$,
    '22023', null, 'an all-zero trace id is refused');
select throws_ok($$ select brooq.enqueue('t.trace', '{}', trace_context => '{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01"}') $$,
    '22023', null, 'an all-zero parent id is refused');
select throws_ok($$ select brooq.enqueue('t.trace', '{}', trace_context => '{"traceparent": "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}') $$,
    '22023', null, 'version ff is refused');
select throws_ok($$ select brooq.enqueue('t.trace', '{}', trace_context => '{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "baggage": "k=v"}') $$,
    '22023', null, 'another key (baggage) is refused');
select throws_ok($$ select brooq.enqueue('t.trace', '{}', trace_context => '{"tracestate": "a=b"}') $$,
    '22023', null, 'a tracestate without traceparent is refused');
select throws_ok($$ select brooq.enqueue('t.trace', '{}', trace_context => '{"traceparent": 7}') $$,
    '22023', null, 'a traceparent that is not a string is refused');
select throws_ok(format($$ select brooq.enqueue('t.trace', '{}', trace_context => %L) $$,
                        jsonb_build_object('traceparent', '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
                                           'tracestate', repeat('x', 513)))::text,
    '22023', null, 'a tracestate over 512 characters is refused');
select throws_ok($$ select brooq.enqueue_many('t.trace', array['{}']::jsonb[], trace_context => '[1]') $$,
    '22023', 'brooq.enqueue_many: trace_context [1] is not a W3C trace context', 'enqueue_many refuses it too, and says so');
select throws_ok(format($$ select brooq.enqueue('t.trace', '{}', trace_context => %L) $$,
                        jsonb_build_object('traceparent', repeat('0', 200)))::text,
    '22023', 'brooq.enqueue: trace_context {"traceparent": "' || repeat('0', 63) || ' is not a W3C trace context',
    'the bad value is quoted cut to 80 characters');
select is((select count(*) from brooq.job where topic = 't.trace'), 8::bigint, 'nothing was written by the refused calls');

-- the producer role may pass it --------------------------------------------------------
set local role brooq_producer;
select lives_ok($$ select brooq.enqueue('t.trace', '{}', trace_context => '{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}') $$,
    'brooq_producer enqueues with a trace context (the check runs as the definer)');
reset role;

select * from finish();
rollback;
