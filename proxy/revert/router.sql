-- Revert brooq_proxy:router from pg

begin;

drop function brooq_proxy._enqueue_many_split(text, jsonb[], text[], integer[], integer[], timestamptz, integer, interval, text[], jsonb);
drop function brooq_proxy._enqueue_many_any(text, jsonb[], text[], timestamptz, integer, interval, text[], jsonb);
drop function brooq_proxy._enqueue_many_on(integer, text, jsonb[], text[], timestamptz, integer, interval, text[], jsonb, integer[], bigint[], text);
drop function brooq_proxy.route_after(text, text, text, bigint[]);
drop function brooq_proxy._declare_topic_all(text, integer, interval, interval, interval, integer, boolean, interval, integer, integer, integer, interval, interval, boolean, boolean);
drop function brooq_proxy._alter_topic_all(text, integer, interval, interval, interval, integer, boolean, interval, integer, integer, integer, interval, interval, boolean, boolean, text[]);
drop function brooq_proxy._set_paused_all(text, boolean);
drop view brooq.topic_stats;
drop view brooq.topics;
drop function brooq_proxy.partition_topics();
drop function brooq_proxy.partition_topic_stats();
drop schema brooq cascade;

commit;
