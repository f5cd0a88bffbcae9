"""The Django app of brooq: it has no models; it brings the management commands
brooq_worker and brooq_deploy (docs/django.md)."""

from __future__ import annotations

from django.apps import AppConfig  # type: ignore[import-untyped]


class BrooqConfig(AppConfig):  # type: ignore[misc]  # django ships no type hints
    name = "brooq.contrib.django"
    label = "brooq"
    verbose_name = "brooq"
