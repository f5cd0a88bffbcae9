-- Verify brooq_proxy:router on pg

begin;

select 'brooq.enqueue(text, jsonb, text, timestamptz, integer, interval, text, jsonb, bigint[], text)'::regprocedure,
       'brooq.enqueue_many(text, jsonb[], text[], timestamptz, integer, interval, text[], jsonb, integer[], bigint[], text)'::regprocedure,
       'brooq.declare_topic(text, integer, interval, interval, interval, integer, boolean, interval, integer, integer, integer, interval, interval, boolean, boolean)'::regprocedure,
       'brooq.alter_topic(text, integer, interval, interval, interval, integer, boolean, interval, integer, integer, integer, interval, interval, boolean, boolean, text[])'::regprocedure,
       'brooq.pause_topic(text)'::regprocedure,
       'brooq.resume_topic(text)'::regprocedure,
       'brooq.cancel(bigint)'::regprocedure,
       'brooq.retry(bigint, boolean, boolean)'::regprocedure,
       'brooq.job_fate(bigint)'::regprocedure,
       'brooq_proxy.partition_topic_stats()'::regprocedure,
       'brooq_proxy.partition_topics()'::regprocedure,
       'brooq_proxy.resolve(interval, interval)'::regprocedure,
       'brooq_proxy._copy_topics(text, jsonb)'::regprocedure,
       'brooq_proxy._enqueue_staged_split(uuid, text, jsonb[], text[], integer[], integer[], timestamptz, integer, interval, text[], jsonb)'::regprocedure;
select 1 / (not pg_catalog.has_function_privilege('brooq_producer', 'brooq_proxy.resolve(interval, interval)', 'execute'))::int;
select 'brooq.topic_stats'::regclass, 'brooq.topics'::regclass;

rollback;
