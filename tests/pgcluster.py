"""The throwaway PostgreSQL cluster of the tests and the benchmark: brooq.tools.cluster,
the one `brooq demo` starts without --dsn."""

from brooq.tools.cluster import Cluster, NoServer, bindir, free_port, has_pg_cron

__all__ = ["Cluster", "NoServer", "bindir", "free_port", "has_pg_cron"]
