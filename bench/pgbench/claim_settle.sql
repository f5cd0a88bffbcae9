-- SQL ceiling, drain: what a worker does, without the worker: claim :batch jobs
-- (one transaction), then settle them all as done with settle_many (another one).
-- Run by bench/main.py:  pgbench -n -M prepared -D batch=100 -f claim_settle.sql
select coalesce(array_agg(id), '{}') as ids, coalesce(array_agg(lease_token), '{}') as tokens,
       count(*) as n
  from brooq.claim('pgbench-' || :client_id, '{bench}', :batch::int, '30 seconds')
\gset
select count(*)
  from brooq.settle_many('pgbench-' || :client_id, :ids::bigint[], :tokens::bigint[],
                         array_fill('done'::text, array[:n::int]));
