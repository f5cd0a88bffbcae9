"""manage.py brooq_declare: declare the topics of the project's handlers, at deploy time.

The handlers of brooq.contrib.django.handler (BROOQ['HANDLERS'], else the jobs module of
each installed app), each topic with its handler's settings, as a worker with
brooq_admin declares them when it starts: run it after `migrate` (or brooq_deploy), so
that a view can enqueue before the first worker runs. Needs brooq_admin.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import (  # type: ignore[import-untyped]
    BaseCommand,
    CommandError,
    CommandParser,
)

from brooq.contrib.django import declare_topics
from brooq.errors import BrooqError
from brooq.messages import _
from brooq.tools.text import describe


class Command(BaseCommand):  # type: ignore[misc]  # django ships no type hints
    help = _("help.django.declare")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--database", help=_("help.django.database"))

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            declared = declare_topics(using=options["database"])
        except BrooqError as exc:
            raise CommandError(describe(exc)) from exc
        if not declared:
            raise CommandError(_("django.no_handlers"))
        for topic, created in declared:
            self.stdout.write(_("django.topic_created" if created else "django.topic_declared", topic=topic))
