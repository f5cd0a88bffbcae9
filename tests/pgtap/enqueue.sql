-- brooq.enqueue: structure, behaviour, errors, privileges.
begin;
select plan(5);

select has_function('brooq', 'enqueue', array['text', 'jsonb', 'text', 'timestamp with time zone', 'integer', 'interval']);

select lives_ok($$ select brooq.declare_topic($q$t.enqueue$q$) $$, 'declare the topic');
select results_eq(
    $$ select created from brooq.enqueue('t.enqueue', '{"a": 1}', idempotency_key => 'k') $$,
    array[true], 'a new key creates a job');
select results_eq(
    $$ select e.id = j.id, e.created from brooq.enqueue('t.enqueue', '{"a": 2}', idempotency_key => 'k') e,
              brooq.job j where j.idempotency_key = 'k' $$,
    $$ values (true, false) $$, 'a repeated key returns the existing id, created = false');
select throws_ok(
    $$ select * from brooq.enqueue('t.missing') $$,
    '42704', 'topic "t.missing" does not exist', 'an unknown topic is 42704');

select * from finish();
rollback;
