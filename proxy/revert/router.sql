-- Revert brooq_proxy:router from pg

begin;

drop view brooq.topic_stats;
drop view brooq.topics;
drop function brooq_proxy._reraise(text, text, text, text, text);
drop function brooq_proxy._hold_partitions();
drop function brooq_proxy._enqueue_on(text, jsonb, text, timestamptz, integer, interval, text, jsonb, bigint[], text);
drop function brooq_proxy._enqueue_many_split(text, jsonb[], text[], integer[], integer[], timestamptz, integer, interval, text[], jsonb);
drop function brooq_proxy._enqueue_staged_split(uuid, text, jsonb[], text[], integer[], integer[], timestamptz, integer, interval, text[], jsonb);
drop function brooq_proxy._decide_split(uuid, integer[], text);
drop function brooq_proxy._decide_on(integer, uuid, text);
drop function brooq_proxy._decide_each(uuid, integer[], text);
drop function brooq_proxy._publish(uuid, integer[]);
drop function brooq_proxy._enqueue_many_any(text, jsonb[], text[], timestamptz, integer, interval, text[], jsonb);
drop function brooq_proxy._enqueue_many_on(integer, text, jsonb[], text[], timestamptz, integer, interval, text[], jsonb, integer[], bigint[], text);
drop function brooq_proxy.route_after(text, text, text, bigint[]);
drop function brooq_proxy._declare_topic_all(text, integer, interval, interval, interval, integer, boolean, interval, integer, integer, integer, interval, interval, boolean, boolean);
drop function brooq_proxy._alter_topic_all(text, integer, interval, interval, interval, integer, boolean, interval, integer, integer, integer, interval, interval, boolean, boolean, text[]);
drop function brooq_proxy._set_paused_all(text, boolean);
drop function brooq_proxy._set_paused(text, boolean);
drop function brooq_proxy._cancel_on(bigint);
drop function brooq_proxy._retry_on(bigint, boolean, boolean);
drop function brooq_proxy._job_fate_on(bigint);
drop function brooq_proxy._partition_topic_stats_all();
drop function brooq_proxy.partition_topic_stats();
drop function brooq_proxy._partition_topics_all();
drop function brooq_proxy.partition_topics();
drop function brooq_proxy._open_calls_on(integer, interval);
drop function brooq_proxy._forget_on(integer, interval, uuid[]);
drop function brooq_proxy.resolve(interval, interval);
drop function brooq_proxy._copy_topics(text, jsonb);
drop function brooq_proxy._cluster_topics();
drop type brooq_proxy.resolved;
drop schema brooq cascade;

commit;
