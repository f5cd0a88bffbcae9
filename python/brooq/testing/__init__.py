"""brooq.testing: test the code that enqueues and the handlers that run, against the real
queue in a real database (docs/testing.md).

- ``drain(conn, worker)`` runs a worker's handlers on the ready jobs, in the test's
  thread and transaction, each job claimed and settled by brooq's own SQL;
- ``assert_enqueued(conn, topic, payload=...)`` and ``refute_enqueued`` read what was
  enqueued, and show what was when it is not what the test expected;
- ``declare_topics(conn, worker)`` declares a worker's topics in the test's transaction.

As a pytest plugin (``pytest -p brooq.testing``, or ``pytest_plugins =
["brooq.testing"]`` in the root conftest.py) it gives the fixtures ``brooq_dsn`` (a
database with brooq deployed, for the session) and ``brooq_conn`` (a connection to it
whose work is rolled back after each test): brooq.testing.plugin. Importing this
package needs no pytest (Django's test runner uses drain and assert_enqueued too).
"""

from brooq.testing.asserts import ANY, QUEUED, assert_enqueued, contains, refute_enqueued
from brooq.testing.drains import (
    Drained,
    DrainedAttempt,
    DrainLimit,
    declare_topics,
    drain,
    topic_handlers,
)

# Read by pytest only when this package is loaded as a plugin (-p brooq.testing): the
# fixtures, in a module of their own that imports pytest.
pytest_plugins = ["brooq.testing.plugin"]

__all__ = ["ANY", "QUEUED", "DrainLimit", "Drained", "DrainedAttempt", "assert_enqueued", "contains",
           "declare_topics", "drain", "refute_enqueued", "topic_handlers"]
