-- SQL ceiling, bulk enqueue: one enqueue_many call of :batch jobs per transaction.
-- Run by bench/main.py:  pgbench -n -M prepared -D batch=500 -f enqueue_many.sql
select count(*) from brooq.enqueue_many('bench', array_fill('{"seq": 0}'::jsonb, array[:batch::int]));
