"""docs/errors.md lists every message brooq's SQL raises: no failure a caller can cause
is missing from the errors table."""

from __future__ import annotations

import re

from conftest import ROOT


def raised_messages() -> dict[str, str]:
    """The format string of every RAISE EXCEPTION in sql/, with the file it is in."""
    found: dict[str, str] = {}
    for path in sorted((ROOT / "sql").glob("*.sql")):
        if path.name == "install.sql":
            continue
        for m in re.finditer(r"raise exception\s+'((?:[^']|'')*)'", path.read_text()):
            found[m.group(1).replace("''", "'")] = path.name
    return found


def test_every_raised_message_is_in_the_errors_table() -> None:
    doc = (ROOT / "docs" / "errors.md").read_text()
    missing = {message: where for message, where in raised_messages().items()
               if f"`{message}`" not in doc}
    assert missing == {}, f"messages raised in sql/ but not in docs/errors.md: {missing}"


def test_the_check_sees_the_messages() -> None:
    messages = raised_messages()
    assert len(messages) > 40
    assert "invalid lease %" in messages and "brooq.claim: arguments must not be NULL" in messages
