-- brooq structure: schema, tables, columns, the state domain, named CHECK
-- constraints (proven by inserts as the owner), indexes, row types, views;
-- then table privileges under switched roles.
begin;
select plan(74);

-- Structure -------------------------------------------------------------------

select has_schema('brooq');
select tables_are('brooq', array['topic', 'job', 'job_watch', 'claim_window', 'flow_lock', 'job_group', 'schedule', 'retention_stat', 'staged_call',
                                 'job_edge', 'job_edge_check', 'job_step', 'job_wait', 'event', 'event_sweep'],
    'brooq has exactly the tables topic, job, job_watch, claim_window, flow_lock, job_group, schedule, retention_stat, staged_call, job_edge, job_edge_check, job_step, job_wait, event and event_sweep');
select views_are('brooq', array['topics', 'topic_stats', 'in_flight', 'jobs', 'schedules', 'retention_stats', 'staged_calls',
                          '_job_parents'],
    'brooq has exactly the views topics, topic_stats, in_flight, jobs, schedules, retention_stats and staged_calls, and the private _job_parents');
select types_are('brooq', array['job_state', 'enqueued', 'claimed_job', 'settled', 'reaped', 'maintenance_job', 'health_check', 'ticked_job',
                                'parent_job', 'child_job', 'checkpointed', 'step', 'suspended', 'awaited', 'emitted'],
    'brooq has exactly its named row types and the state domain');
select domains_are('brooq', array['job_state'], 'brooq has the one domain job_state');
select domain_type_is('brooq', 'job_state', 'text', 'job_state is a text domain (revertible, unlike an enum)');
select is(
    (select pg_get_constraintdef(c.oid) from pg_constraint c where c.contypid = 'brooq.job_state'::regtype
        and c.conname = 'job_state_known'),
    $$CHECK ((VALUE = ANY (ARRAY['pending'::text, 'processing'::text, 'done'::text, 'failed'::text, 'dead'::text, 'canceled'::text, 'waiting'::text])))$$,
    'job_state_known allows exactly the seven states');

select columns_are('brooq', 'topic',
    array['name', 'max_attempts', 'backoff_base', 'backoff_max', 'retention', 'max_payload_bytes',
          'notify', 'paused', 'created_at', 'updated_at', 'max_lease', 'max_lease_losses',
          'max_in_flight', 'rate', 'per', 'max_execution', 'retain_done', 'retain_payload']);
select has_pk('brooq', 'topic', 'topic has a primary key');
select col_is_pk('brooq', 'topic', 'name', 'topic is keyed by name');
select col_type_is('brooq', 'topic', 'backoff_base', 'interval', 'backoff_base is an interval');
select col_type_is('brooq', 'topic', 'retention', 'interval', 'retention is an interval');
select col_type_is('brooq', 'topic', 'created_at', 'timestamp with time zone', 'topic.created_at is a timestamptz');
select set_eq(
    $$ select conname::text from pg_constraint where conrelid = 'brooq.topic'::regclass and contype = 'c' $$,
    array['topic_name_valid', 'topic_max_attempts_positive', 'topic_backoff_base_positive',
          'topic_backoff_max_not_below_base', 'topic_retention_not_negative', 'topic_max_payload_bytes_range',
          'topic_max_lease_range', 'topic_max_lease_losses_range', 'topic_max_in_flight_range',
          'topic_rate_range', 'topic_per_range', 'topic_rate_with_per', 'topic_max_execution_range'],
    'topic has its named CHECK constraints');

select columns_are('brooq', 'job',
    array['id', 'topic', 'payload', 'state', 'priority', 'attempts', 'max_attempts', 'idempotency_key',
          'available_at', 'created_at', 'updated_at', 'locked_by', 'locked_until', 'lease_token',
          'last_error', 'result', 'lease_losses', 'progress', 'first_claimed_at', 'group_key', 'group_seq',
          'trace_context', 'after_policy', 'parents_left', 'canceled_by']);
select col_is_pk('brooq', 'job', 'id', 'job is keyed by id');
select col_type_is('brooq', 'job', 'id', 'bigint', 'job ids are bigint');
select col_type_is('brooq', 'job', 'payload', 'jsonb', 'the payload is jsonb');
select col_type_is('brooq', 'job', 'result', 'jsonb', 'the result is jsonb');
select col_type_is('brooq', 'job', 'state', 'brooq.job_state', 'state uses the job_state domain');
select col_default_is('brooq', 'job', 'state', 'pending'::text, 'a job starts pending');
select col_type_is('brooq', 'job', 'available_at', 'timestamp with time zone', 'available_at is a timestamptz');
select col_type_is('brooq', 'job', 'locked_until', 'timestamp with time zone', 'locked_until is a timestamptz');
select col_type_is('brooq', 'job', 'lease_token', 'bigint', 'lease_token is a bigint');
select col_not_null('brooq', 'job', 'payload', 'payload is NOT NULL');
select col_not_null('brooq', 'job', 'available_at', 'available_at is NOT NULL');
select col_is_null('brooq', 'job', 'locked_by', 'locked_by is nullable (no lease outside processing)');
select is(
    (select a.attidentity from pg_attribute a where a.attrelid = 'brooq.job'::regclass and a.attname = 'id'),
    'd', 'job.id is an identity column');
select has_sequence('brooq', 'job_id_seq', 'the identity sequence is brooq.job_id_seq (enqueue_many draws from it)');
select set_eq(
    $$ select conname::text from pg_constraint where conrelid = 'brooq.job'::regclass and contype = 'c' $$,
    array['job_lease_iff_processing', 'job_attempts_not_negative', 'job_idempotency_key_not_empty',
          'job_lease_losses_not_negative', 'job_group_key_valid', 'job_group_seq_iff_key'],
    'job has its named CHECK constraints');
select is(
    (select count(*)::int from pg_constraint where conrelid = 'brooq.job'::regclass and contype = 'f'), 0,
    'job has no foreign key (enqueue checks the topic; no key-share lock on topic per insert)');
select ok(
    (select reloptions from pg_class where oid = 'brooq.job'::regclass)
        @> array['autovacuum_vacuum_scale_factor=0.01', 'autovacuum_analyze_scale_factor=0.02', 'fillfactor=90'],
    'job has per-table autovacuum settings for a high-churn queue');

select indexes_are('brooq', 'job',
    array['job_pkey', 'job_ready_idx', 'job_lease_idx', 'job_terminal_idx', 'job_idempotency_key_idx', 'job_suspect_idx',
          'job_group_idx', 'job_failures_idx'],
    'job has exactly its eight indexes');
select has_index('brooq', 'job', 'job_group_idx', array['topic', 'group_key', 'group_seq'],
    'job_group_idx is on (topic, group_key, group_seq): the first active job of a group');
select is(
    (select pg_get_expr(i.indpred, i.indrelid) from pg_index i where i.indexrelid = 'brooq.job_group_idx'::regclass),
    $$((group_key IS NOT NULL) AND ((state)::text = ANY (ARRAY['waiting'::text, 'pending'::text, 'failed'::text, 'processing'::text])))$$,
    'job_group_idx holds the active grouped jobs only (waiting for parents included)');
select has_index('brooq', 'job', 'job_ready_idx', array['topic', 'priority', 'available_at', 'id', 'state'],
    'job_ready_idx is on (topic, priority, available_at, id), carrying state for topic_stats');
select is(
    (select pg_get_expr(i.indpred, i.indrelid) from pg_index i where i.indexrelid = 'brooq.job_ready_idx'::regclass),
    $$((state)::text = ANY (ARRAY['pending'::text, 'failed'::text]))$$,
    'job_ready_idx is partial: ready states only, so terminal rows never slow claim');
select ok(
    (select pg_get_indexdef(i.indexrelid) from pg_index i where i.indexrelid = 'brooq.job_ready_idx'::regclass)
        like '%(topic, priority DESC, available_at, id)%',
    'job_ready_idx is in claim order (priority DESC)');
select has_index('brooq', 'job', 'job_lease_idx', array['locked_until'], 'job_lease_idx is on locked_until');
select is(
    (select pg_get_expr(i.indpred, i.indrelid) from pg_index i where i.indexrelid = 'brooq.job_lease_idx'::regclass),
    '(locked_until IS NOT NULL)',
    'job_lease_idx is filtered on the lease column, not on state');
select has_index('brooq', 'job', 'job_terminal_idx', array['topic', 'updated_at'], 'job_terminal_idx is on (topic, updated_at)');
select is(
    (select pg_get_expr(i.indpred, i.indrelid) from pg_index i where i.indexrelid = 'brooq.job_terminal_idx'::regclass),
    $$((state)::text = ANY (ARRAY['done'::text, 'dead'::text, 'canceled'::text]))$$,
    'job_terminal_idx covers the terminal states only');
select has_index('brooq', 'job', 'job_failures_idx', array['topic', 'state', 'id'],
    'job_failures_idx is on (topic, state, id): a topic''s failures of a state, newest first');
select is(
    (select pg_get_expr(i.indpred, i.indrelid) from pg_index i where i.indexrelid = 'brooq.job_failures_idx'::regclass),
    $$((state)::text = ANY (ARRAY['failed'::text, 'dead'::text, 'canceled'::text]))$$,
    'job_failures_idx holds failed, dead and canceled jobs only');
select index_is_unique('brooq', 'job', 'job_idempotency_key_idx', 'the idempotency index is unique');
select is(
    (select pg_get_expr(i.indpred, i.indrelid) from pg_index i where i.indexrelid = 'brooq.job_idempotency_key_idx'::regclass),
    '(idempotency_key IS NOT NULL)',
    'the idempotency index covers keyed rows only, in every state');

select has_composite('brooq', 'claimed_job', 'claimed_job is a named row type');
select is(
    (select array_agg(a.attname::text order by a.attnum) from pg_attribute a
      where a.attrelid = (select typrelid from pg_type where oid = 'brooq.claimed_job'::regtype) and a.attnum > 0),
    array['id', 'topic', 'payload', 'attempt', 'max_attempts', 'priority', 'lease_token', 'locked_until', 'created_at',
          'execution_deadline', 'execution_left', 'trace_context', 'parents'],
    'claimed_job carries lease_token under the name settle and heartbeat take');
select is(
    (select array_agg(a.attname::text order by a.attnum) from pg_attribute a
      where a.attrelid = (select typrelid from pg_type where oid = 'brooq.enqueued'::regtype) and a.attnum > 0),
    array['id', 'created'], 'enqueued is (id, created)');

-- Behaviour: the CHECKs hold even for the owner writing the table directly ------

select lives_ok($$
    insert into brooq.job (id, topic, payload, state, max_attempts, available_at, created_at, updated_at,
                           locked_by, locked_until)
    overriding system value
    values (-1, 't.structure', '{}', 'processing', 1, now(), now(), now(), 'w', now())
$$, 'a processing row with a full lease is accepted');
select throws_ok($$
    insert into brooq.job (topic, payload, state, max_attempts, available_at, created_at, updated_at)
    values ('t.structure', '{}', 'processing', 1, now(), now(), now())
$$, '23514', 'new row for relation "job" violates check constraint "job_lease_iff_processing"',
    'job_lease_iff_processing rejects a processing row without a lease');
select throws_ok($$
    insert into brooq.job (topic, payload, state, max_attempts, available_at, created_at, updated_at,
                           locked_by, locked_until)
    values ('t.structure', '{}', 'pending', 1, now(), now(), now(), 'w', now())
$$, '23514', 'new row for relation "job" violates check constraint "job_lease_iff_processing"',
    'job_lease_iff_processing rejects a pending row with a lease');
select throws_ok($$
    insert into brooq.job (topic, payload, state, max_attempts, available_at, created_at, updated_at, locked_by)
    values ('t.structure', '{}', 'processing', 1, now(), now(), now(), 'w')
$$, '23514', 'new row for relation "job" violates check constraint "job_lease_iff_processing"',
    'job_lease_iff_processing rejects locked_by without locked_until');
select throws_ok($$
    insert into brooq.job (topic, payload, state, max_attempts, available_at, created_at, updated_at, locked_until)
    values ('t.structure', '{}', 'done', 1, now(), now(), now(), now())
$$, '23514', 'new row for relation "job" violates check constraint "job_lease_iff_processing"',
    'job_lease_iff_processing rejects locked_until on a terminal row');
select throws_ok($$ update brooq.job set state = 'done' where id = -1 $$,
    '23514', 'new row for relation "job" violates check constraint "job_lease_iff_processing"',
    'leaving processing without clearing the lease is rejected');
select throws_ok($$
    insert into brooq.job (topic, payload, state, max_attempts, available_at, created_at, updated_at)
    values ('t.structure', '{}', 'running', 1, now(), now(), now())
$$, '23514', 'value for domain brooq.job_state violates check constraint "job_state_known"',
    'job_state_known rejects an unknown state');
select throws_ok($$
    insert into brooq.job (topic, payload, max_attempts, available_at, created_at, updated_at, attempts)
    values ('t.structure', '{}', 1, now(), now(), now(), -1)
$$, '23514', 'new row for relation "job" violates check constraint "job_attempts_not_negative"',
    'job_attempts_not_negative rejects negative attempts');
select throws_ok($$
    insert into brooq.job (topic, payload, max_attempts, available_at, created_at, updated_at, lease_losses)
    values ('t.structure', '{}', 1, now(), now(), now(), -1)
$$, '23514', 'new row for relation "job" violates check constraint "job_lease_losses_not_negative"',
    'job_lease_losses_not_negative rejects a negative count');
select throws_ok($$
    insert into brooq.topic (name, created_at, updated_at, max_lease_losses) values ('t.structure.losses', now(), now(), 0)
$$, '23514', 'new row for relation "topic" violates check constraint "topic_max_lease_losses_range"',
    'topic_max_lease_losses_range holds for direct inserts');
select throws_ok($$
    insert into brooq.job (topic, payload, max_attempts, available_at, created_at, updated_at, idempotency_key)
    values ('t.structure', '{}', 1, now(), now(), now(), '')
$$, '23514', 'new row for relation "job" violates check constraint "job_idempotency_key_not_empty"',
    'an empty idempotency key is never stored (empty = no key)');
select throws_ok($$
    insert into brooq.job (topic, payload, max_attempts, available_at, created_at, updated_at, idempotency_key, state)
    values ('t.structure', '{}', 1, now(), now(), now(), 'k', 'done'),
           ('t.structure', '{}', 1, now(), now(), now(), 'k', 'pending')
$$, '23505', 'duplicate key value violates unique constraint "job_idempotency_key_idx"',
    'one job per (topic, key), a terminal one included');
select lives_ok($$
    insert into brooq.job (topic, payload, max_attempts, available_at, created_at, updated_at, idempotency_key)
    values ('t.structure', '{}', 1, now(), now(), now(), 'k2'),
           ('t.structure.other', '{}', 1, now(), now(), now(), 'k2'),
           ('t.structure', '{}', 1, now(), now(), now(), null),
           ('t.structure', '{}', 1, now(), now(), now(), null)
$$, 'the same key in another topic, and any number of unkeyed jobs, are accepted');
select throws_ok($$
    insert into brooq.topic (name, created_at, updated_at) values ('Bad Name', now(), now())
$$, '23514', 'new row for relation "topic" violates check constraint "topic_name_valid"',
    'topic_name_valid holds for direct inserts');
select throws_ok($$
    insert into brooq.topic (name, backoff_base, backoff_max, created_at, updated_at)
    values ('t.structure', '1 minute', '1 second', now(), now())
$$, '23514', 'new row for relation "topic" violates check constraint "topic_backoff_max_not_below_base"',
    'topic_backoff_max_not_below_base holds for direct inserts');
select throws_ok($$
    insert into brooq.topic (name, max_attempts, created_at, updated_at) values ('t.structure', 0, now(), now())
$$, '23514', 'new row for relation "topic" violates check constraint "topic_max_attempts_positive"',
    'topic_max_attempts_positive holds for direct inserts');

-- Privileges: the tables belong to the owner; no runtime role has any right on them

select table_privs_are('brooq', 'job', 'brooq_producer', array[]::text[], 'brooq_producer has no privilege on brooq.job');
select table_privs_are('brooq', 'job', 'brooq_worker', array[]::text[], 'brooq_worker has no privilege on brooq.job');
select table_privs_are('brooq', 'job', 'brooq_admin', array[]::text[], 'brooq_admin has no privilege on brooq.job');
select table_privs_are('brooq', 'topic', 'brooq_admin', array[]::text[], 'brooq_admin has no privilege on brooq.topic');
select schema_privs_are('brooq', 'brooq_producer', array['USAGE'], 'brooq_producer may only use the schema');
select schema_privs_are('brooq', 'brooq_worker', array['USAGE'], 'brooq_worker may only use the schema');
select schema_privs_are('brooq', 'brooq_admin', array['USAGE'], 'brooq_admin may only use the schema (not create in it)');

set local role brooq_admin;
select throws_ok($$ select count(*) from brooq.job $$, '42501', 'permission denied for table job',
    'even brooq_admin cannot read brooq.job directly');
select throws_ok($$ update brooq.topic set paused = true $$, '42501', 'permission denied for table topic',
    'even brooq_admin cannot write brooq.topic directly');
reset role;

select * from finish();
rollback;
