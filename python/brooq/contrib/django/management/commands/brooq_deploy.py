"""manage.py brooq_deploy: `brooq deploy` into Django's database (sqitch, else psql).

The connection comes from DATABASES (brooq.contrib.django.dsn); sqitch and psql get it
in the libpq environment variables (PGPASSWORD for the password), never on their
command lines. The role needs the rights of any brooq deploy (docs/security.md).
"""

from __future__ import annotations

import argparse
from typing import Any

from django.core.management.base import (  # type: ignore[import-untyped]
    BaseCommand,
    CommandError,
    CommandParser,
)

from brooq.contrib.django import dsn
from brooq.messages import _
from brooq.tools import cli


class Command(BaseCommand):  # type: ignore[misc]  # django ships no type hints
    help = _("help.django.deploy")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--database", help=_("help.django.database"))
        parser.add_argument("--method", choices=["auto", "sqitch", "psql"], default="auto",
                            help=_("help.deploy.method"))

    def handle(self, *args: Any, **options: Any) -> None:
        given = argparse.Namespace(dsn=dsn(options["database"]), root=None, method=options["method"],
                                   verbose=options["verbosity"] > 1)
        try:
            cli.cmd_deploy(given, self.stdout)
        except cli.Failure as exc:
            raise CommandError(str(exc)) from exc
