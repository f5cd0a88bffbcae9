"""The Django app of brooq: the management commands brooq_worker, brooq_deploy and
brooq_declare, and the jobs in the admin (an unmanaged model over the view brooq.jobs,
brooq.contrib.django.admin; docs/django.md)."""

from __future__ import annotations

from django.apps import AppConfig  # type: ignore[import-untyped]


class BrooqConfig(AppConfig):  # type: ignore[misc]  # django ships no type hints
    name = "brooq.contrib.django"
    label = "brooq"
    verbose_name = "brooq"
