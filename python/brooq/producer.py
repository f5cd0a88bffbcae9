"""The producer calls on a psycopg connection: enqueue, enqueue_many, get_job, parents,
children, list_jobs, count_jobs, and the reads of topics: topic_stats, get_topic.

Each one runs on the caller's psycopg connection, inside the caller's transaction
(in autocommit mode, each call commits by itself): "write my row and enqueue the
job" is one commit. Errors are mapped by SQLSTATE to :mod:`brooq.errors`. Each is the
face of its declaration in :mod:`brooq.calls` (its SQL, parameters, result and errors);
brooq.aio and brooq.contrib have the same calls, made from the same declarations.
"""

from __future__ import annotations

from brooq import calls, faces

# Declared in brooq.calls; named here too, where they were first, for code that imports them.
from brooq.admin import cancel, declare_topic, declare_topic_settings
from brooq.calls import Enqueued, JobFate, decoded

__all__ = ["Enqueued", "JobFate", "cancel", "children", "count_jobs", "declare_topic",
           "declare_topic_settings", "decoded", "enqueue", "enqueue_many", "get_job", "get_topic",
           "list_jobs", "parents", "topic_stats"]

enqueue = faces.sync(calls.enqueue, __name__)
enqueue_many = faces.sync(calls.enqueue_many, __name__)
get_job = faces.sync(calls.get_job, __name__)
parents = faces.sync(calls.parents, __name__)
children = faces.sync(calls.children, __name__)
list_jobs = faces.sync(calls.list_jobs, __name__)
count_jobs = faces.sync(calls.count_jobs, __name__)
topic_stats = faces.sync(calls.topic_stats, __name__)
get_topic = faces.sync(calls.get_topic, __name__)
