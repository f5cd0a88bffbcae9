-- brooq.flow_lock: one row per topic, the lock brooq.claim takes to count a topic
-- declared with max_in_flight or rate (see brooq.claim): a claim locks the rows of
-- its flow-limited topics FOR UPDATE, in name order, until its transaction ends.
-- brooq.declare_topic adds the row with the topic; this change adds the rows of the
-- topics that exist when it is deployed.
--
-- A table of its own, not an advisory lock: an advisory lock belongs to no one, so
-- any login could take a topic's key and stall its claims; a row lock needs UPDATE
-- on the table, which no role but brooq's owner holds (the SECURITY DEFINER
-- functions). Not the row of brooq.topic: declare_topic, pause_topic and
-- resume_topic update that row, so an admin's transaction left open after one of
-- them would stall the topic's claims too (brooq.job has no foreign key to
-- brooq.topic, so the hot path takes no KEY SHARE lock on it either way).
create table brooq.flow_lock (
    topic text not null,
    constraint flow_lock_pkey primary key (topic),
    constraint flow_lock_topic_fkey foreign key (topic) references brooq.topic (name) on delete cascade
);

comment on table brooq.flow_lock is
'One row per topic, locked by brooq.claim to count a flow-limited topic (private: written by brooq.declare_topic).';

revoke all on table brooq.flow_lock from public;

insert into brooq.flow_lock (topic) select t.name from brooq.topic t;
