-- schema: the schema brooq. Clients get USAGE only; its tables are never granted,
-- and every function is revoked from PUBLIC one by one (ALTER DEFAULT PRIVILEGES
-- ... IN SCHEMA cannot take PUBLIC's EXECUTE away).
create schema brooq;

comment on schema brooq is 'brooq: a job queue in PostgreSQL. Use its functions; its tables are private.';

revoke all on schema brooq from public;
grant usage on schema brooq to brooq_producer, brooq_worker, brooq_admin;
