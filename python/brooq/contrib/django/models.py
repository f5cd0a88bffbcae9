"""The jobs as Django sees them: an unmanaged model over the view brooq.jobs, read-only
(docs/django.md, "The admin"). Never over the table brooq.job, which is private: the
view is what brooq grants (brooq_producer, brooq_worker and brooq_admin may read it),
and a change goes through brooq.cancel and brooq.retry (brooq.contrib.django.admin),
never through an UPDATE.

The jsonb columns are text fields: Django reads jsonb as text on its connections, and
a payload Python's json cannot decode (nested past the recursion limit) must not fail
the page that shows it; the admin decodes what it can.
"""

from __future__ import annotations

from django.db import models  # type: ignore[import-untyped]

from brooq.states import STATES


class Job(models.Model):  # type: ignore[misc]  # django ships no type hints
    """A job and its outcome: a row of brooq.jobs."""

    id = models.BigIntegerField(primary_key=True)
    topic = models.TextField()
    state = models.TextField(choices=[(s, s) for s in STATES])
    attempts = models.IntegerField()
    max_attempts = models.IntegerField()
    priority = models.IntegerField()
    payload = models.TextField()
    idempotency_key = models.TextField(null=True)
    available_at = models.DateTimeField()
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()
    locked_by = models.TextField(null=True)
    locked_until = models.DateTimeField(null=True)
    last_error = models.TextField(null=True)
    result = models.TextField(null=True)
    progress = models.TextField(null=True)
    group_key = models.TextField(null=True)

    class Meta:
        managed = False  # brooq's schema is deployed by brooq (brooq_deploy), never migrated
        db_table = '"brooq"."jobs"'  # quoted: the view jobs of the schema brooq
        ordering = ("-id",)
        default_permissions = ("view",)
        permissions = (("cancel_job", "Can cancel jobs (brooq.cancel)"),
                       ("retry_job", "Can re-drive jobs (brooq.retry)"))

    def __str__(self) -> str:
        return f"job {self.id} ({self.topic}, {self.state})"
