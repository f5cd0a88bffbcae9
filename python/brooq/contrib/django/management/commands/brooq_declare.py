"""manage.py brooq_declare: make the database hold the project's topics and schedules, at
deploy time.

The project's handlers (brooq.contrib.django.handler) and tasks (.task, .register), from
BROOQ['HANDLERS'], else the jobs module of each installed app: each topic with its
settings, as a worker with brooq_admin declares it when it starts, and the schedules
declared in code (brooq.periodic, brooq.Schedule). It prints each change, as `brooq
declare` does: what the database holds beyond the code is listed, and deleted only with
--prune; --dry-run writes nothing. Run it after `migrate` (or brooq_deploy), so that a
view can enqueue before the first worker runs. Needs brooq_admin.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import (  # type: ignore[import-untyped]
    BaseCommand,
    CommandError,
    CommandParser,
)

from brooq.contrib.django import declare, registry
from brooq.errors import BrooqError
from brooq.messages import _
from brooq.tools import declare as shown
from brooq.tools.text import describe


class Command(BaseCommand):  # type: ignore[misc]  # django ships no type hints
    help = _("help.django.declare")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--database", help=_("help.django.database"))
        parser.add_argument("--prune", action="store_true", help=_("help.declare.prune"))
        parser.add_argument("--dry-run", action="store_true", help=_("help.declare.dry_run"))

    def handle(self, *args: Any, **options: Any) -> None:
        if registry().empty():
            raise CommandError(_("django.no_handlers"))
        try:
            changes = declare(using=options["database"], prune=options["prune"], dry_run=options["dry_run"])
        except BrooqError as exc:
            raise CommandError(describe(exc)) from exc
        shown.write(changes, self.stdout, dry_run=options["dry_run"])
