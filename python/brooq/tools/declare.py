"""What `brooq declare` and `manage.py brooq_declare` print: each change of
brooq.reconcile on a line, then what the run did.

    + topic email: max_attempts=5
    ~ topic report: max_attempts 5 -> 3, retention 30d -> 7d
    - schedule legacy
    ? topic old: not in the code; --prune deletes it
    declared: 1 created, 1 changed, 1 deleted

``+`` created, ``~`` changed, ``-`` deleted; ``?`` in the database and not in the code,
left alone; ``!`` the same, pruned, and kept because the topic still has jobs.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, TextIO

from brooq.messages import _
from brooq.reconcile import WRITES, Change
from brooq.tools.text import setting_text

SHOWN_PAYLOAD = 200  # characters of a payload's JSON on a line

# A change's line, by its kind and action (a schedule is never in_use: only a topic has jobs).
KEYS = {("topic", "create"): "declare.topic.create", ("topic", "change"): "declare.topic.change",
        ("topic", "delete"): "declare.topic.delete", ("topic", "unlisted"): "declare.topic.unlisted",
        ("topic", "in_use"): "declare.topic.in_use", ("schedule", "create"): "declare.schedule.create",
        ("schedule", "change"): "declare.schedule.change", ("schedule", "delete"): "declare.schedule.delete",
        ("schedule", "unlisted"): "declare.schedule.unlisted"}


def shown(value: Any) -> str:
    """A value as the lines show it: a setting as the CLI's options take it (30s, on,
    none), a payload as compact JSON."""
    if isinstance(value, (dict, list)):
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
        return text if len(text) <= SHOWN_PAYLOAD else text[:SHOWN_PAYLOAD - 3] + "..."
    return setting_text(value)


def line(change: Change, prune_option: str) -> str:
    """One change, in the current language."""
    values = " ".join(f"{name}={shown(v)}" for name, v in change.values) or _("declare.defaults")
    diffs = ", ".join(f"{name} {shown(a)} -> {shown(b)}" for name, a, b in change.diffs)
    key = KEYS[change.kind, change.action]
    return _(key, name=change.name, values=values, diffs=diffs, prune=prune_option)


def write(changes: Sequence[Change], out: TextIO, *, dry_run: bool, prune_option: str = "--prune") -> None:
    """Every change on its line, then the summary: what was written, or, ``dry_run``, what
    would be (nothing was); "nothing changes" when the database held the code already."""
    out.writelines(line(change, prune_option) + "\n" for change in changes)
    counts = {action: sum(1 for c in changes if c.action == action) for action in WRITES}
    if not any(counts.values()):
        out.write(_("declare.nothing") + "\n")
        return
    key = "declare.dry_run" if dry_run else "declare.done"
    out.write(_(key, created=counts["create"], changed=counts["change"], deleted=counts["delete"]) + "\n")
