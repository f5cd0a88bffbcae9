-- brooq.topic: one row per topic, holding its retry, retention and size policy,
-- so that every language that enqueues or works gets the same rules.
-- Written only by brooq.declare_topic, brooq.pause_topic and brooq.resume_topic.
create table brooq.topic (
    name              text        not null,
    max_attempts      integer     not null default 5,
    backoff_base      interval    not null default '1 second',
    backoff_max       interval    not null default '1 minute',
    retention         interval    not null default '30 days',
    max_payload_bytes integer     not null default 1048576,
    notify            boolean     not null default true,
    paused            boolean     not null default false,
    created_at        timestamptz not null,
    updated_at        timestamptz not null,
    -- the longest lease claim and heartbeat may give (table_topic_add_max_lease)
    max_lease         interval    not null default '1 hour',
    -- lease losses in a row that make a job dead (table_topic_add_max_lease_losses)
    max_lease_losses  integer     not null default 5,
    -- flow control in brooq.claim, NULL = no limit (table_topic_add_flow):
    -- at most max_in_flight jobs processing; at most rate claims in any window of per
    max_in_flight     integer,
    rate              integer,
    per               interval,
    -- the longest a job may take across all its attempts, from its first claim;
    -- NULL = no limit (table_topic_add_max_execution)
    max_execution     interval,
    -- retention policies (table_topic_add_retain): false = delete a job as it
    -- settles done; false = clear (to 'null'::jsonb) the payload of a terminal job
    retain_done       boolean     not null default true,
    retain_payload    boolean     not null default true,
    constraint topic_pkey primary key (name),
    constraint topic_name_valid check (name ~ '^[a-z0-9._-]{1,128}$'),
    constraint topic_max_attempts_positive check (max_attempts between 1 and 1000),
    constraint topic_backoff_base_positive check (backoff_base > interval '0'),
    constraint topic_backoff_max_not_below_base check (backoff_max >= backoff_base),
    constraint topic_retention_not_negative check (retention >= interval '0'),
    constraint topic_max_payload_bytes_range check (max_payload_bytes between 1 and 268435455),
    constraint topic_max_lease_range check (max_lease between interval '1 second' and interval '7 days'),
    constraint topic_max_lease_losses_range check (max_lease_losses between 1 and 1000),
    constraint topic_max_in_flight_range check (max_in_flight between 1 and 1000000),
    constraint topic_rate_range check (rate between 1 and 1000000),
    constraint topic_per_range check (per between interval '1 millisecond' and interval '1 day'),
    constraint topic_rate_with_per check ((rate is null) = (per is null)),
    constraint topic_max_execution_range
        check (max_execution between interval '1 second' and interval '100 years')
);

comment on table brooq.topic is
'Topic settings (private: use brooq.declare_topic). retention = 0 keeps terminal jobs forever.';

revoke all on table brooq.topic from public;
