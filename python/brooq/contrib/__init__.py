"""brooq in the frameworks that own your connection: the job is enqueued on *their*
connection, inside *their* transaction, so it commits, or rolls back, with your own
writes.

- :mod:`brooq.contrib.django`: Django's connection (the psycopg 3 backend), a
  ``brooq_worker`` and a ``brooq_deploy`` management command (docs/django.md);
- :mod:`brooq.contrib.sqlalchemy`: a Session or Connection, and
  :mod:`brooq.contrib.sqlalchemy.aio` an AsyncSession or AsyncConnection, on the
  psycopg driver (docs/sqlalchemy.md).

Each imports its framework; brooq itself depends on neither (the extras
``brooq[django]`` and ``brooq[sqlalchemy]`` bring them).
"""
