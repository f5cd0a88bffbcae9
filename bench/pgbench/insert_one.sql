-- The baseline for single enqueues: a bare INSERT of the same row, one per transaction.
insert into brooq.job (topic, payload, max_attempts, available_at, created_at, updated_at)
values ('bench', '{"seq": 0}', 5, now(), now(), now());
