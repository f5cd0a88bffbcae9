-- Revert brooq:view_topics from pg

begin;

drop view brooq.topics;

commit;
