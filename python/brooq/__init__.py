"""brooq: a job queue in PostgreSQL. The queue is SQL; this package is its reference worker."""
