"""manage.py brooq_worker: the worker of `brooq worker`, on Django's database and settings.

It runs ``brooq worker brooq.contrib.django:worker`` in this process: the handlers of
brooq.contrib.django.handler, the connection made from DATABASES (never on a command
line: the children of --processes make it again from the settings), the worker's
settings from settings.BROOQ, and the options of `brooq worker` over them
(--concurrency, --lease, ..., --processes, --progress, --log-level).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from django.conf import settings  # type: ignore[import-untyped]
from django.core.management.base import BaseCommand, CommandParser  # type: ignore[import-untyped]

from brooq import config
from brooq.messages import _
from brooq.tools import cli

WORKER = "brooq.contrib.django:worker"
# the options of `brooq worker` besides the worker's settings, with their help
OPTIONS = {"processes": "help.worker.processes", "progress": "help.progress",
           "log_level": "help.worker.log_level"}


def option(name: str) -> str:
    return "--" + name.replace("_", "-")


class Command(BaseCommand):  # type: ignore[misc]  # django ships no type hints
    help = _("help.django.worker")

    def add_arguments(self, parser: CommandParser) -> None:
        # Taken as text and handed to `brooq worker`, which checks them with its own messages.
        for f in config.SETTINGS:
            if f.name != "dsn":
                parser.add_argument(option(f.name), dest=f.name, metavar=f.name.upper(),
                                    help=_("help.worker.setting", doc=f.doc, default=f.shown_default,
                                           variable=f.variable))
        for name, key in OPTIONS.items():
            parser.add_argument(option(name), dest=name, metavar=name.upper(), help=_(key))

    def handle(self, *args: Any, **options: Any) -> None:
        argv = ["worker", WORKER]
        for name in [*(f.name for f in config.SETTINGS if f.name != "dsn"), *OPTIONS]:
            if options.get(name) is not None:
                argv.append(f"{option(name)}={options[name]}")
        _children_find_the_settings()
        code = cli.main(argv)
        if code:
            raise SystemExit(code)


def _children_find_the_settings() -> None:
    """The children of --processes (`python -m brooq.tools worker ...`) import the
    settings module as this process did: its name in DJANGO_SETTINGS_MODULE, the
    directory it is in on PYTHONPATH."""
    module = settings.SETTINGS_MODULE
    if not module:
        return
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", module)
    top = sys.modules.get(module.partition(".")[0])
    where = getattr(top, "__file__", None)
    if where is None:
        return
    root = Path(where).resolve().parent
    if "." in module:  # a package: the directory that holds it
        root = root.parent
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if str(root) not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([str(root), *paths])
