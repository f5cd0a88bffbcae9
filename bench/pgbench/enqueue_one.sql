-- SQL ceiling, single enqueue: one brooq.enqueue per transaction.
select id from brooq.enqueue('bench', '{"seq": 0}');
