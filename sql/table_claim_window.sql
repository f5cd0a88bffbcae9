-- brooq.claim_window: the claims of each rate-limited topic (declared with rate and
-- per) within its last window: one row per brooq.claim call that took jobs of the
-- topic, at the instant it counted them. brooq.claim reads and trims it under the
-- topic's flow lock (see brooq.claim), so only claims of rate-limited topics touch
-- it; it holds at most `rate` rows per topic (each row counts at least one claim).
-- The sliding-log model: a claim at instant t may take rate - sum(jobs) over
-- (t - per, t] jobs, hence at most rate claims in any window of length per.
create table brooq.claim_window (
    topic      text        not null,
    claimed_at timestamptz not null,
    jobs       integer     not null,
    constraint claim_window_jobs_positive check (jobs > 0)
);

create index claim_window_topic_idx on brooq.claim_window (topic, claimed_at);

comment on table brooq.claim_window is
'Claims of rate-limited topics within their window (private: written by brooq.claim).';

revoke all on table brooq.claim_window from public;
