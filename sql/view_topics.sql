-- brooq.topics: one row per topic, its settings as stored (brooq.declare_topic,
-- brooq.alter_topic), whether it is paused, and when it was declared and last
-- changed. The table brooq.topic is private; this view is what a person or a tool
-- reads: `select * from brooq.topics where name = 'email'`. The topic's depth and
-- what its flow limits hold back are in brooq.topic_stats.
create or replace view brooq.topics as
select t.name,
       t.max_attempts,
       t.backoff_base,
       t.backoff_max,
       t.retention,
       t.max_payload_bytes,
       t.notify,
       t.max_lease,
       t.max_lease_losses,
       t.max_in_flight,
       t.rate,
       t.per,
       t.max_execution,
       t.retain_done,
       t.retain_payload,
       t.paused,
       t.created_at,
       t.updated_at
  from brooq.topic t;

comment on view brooq.topics is
'Every topic''s settings as stored (declare_topic, alter_topic), paused, created_at, updated_at (read-only).';

revoke all on brooq.topics from public;
grant select on brooq.topics to brooq_worker, brooq_admin;
