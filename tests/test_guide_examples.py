"""Every ```python block of docs/python-guide.md runs, in order, in one namespace."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

import pytest

GUIDE = Path(__file__).resolve().parent.parent / "docs" / "python-guide.md"


def blocks() -> list[tuple[int, str]]:
    text = GUIDE.read_text()
    found = []
    for m in re.finditer(r"^```python\n(.*?)^```", text, flags=re.DOTALL | re.MULTILINE):
        line = text.count("\n", 0, m.start()) + 2
        found.append((line, m.group(1)))
    return found


def test_the_guide_has_examples() -> None:
    assert len(blocks()) >= 10


def test_the_guide_examples_run(db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BROOQ_DSN", db)
    module = types.ModuleType("python_guide")  # a real module: dataclasses look their module up
    monkeypatch.setitem(sys.modules, module.__name__, module)
    for line, code in blocks():
        # a block's line numbers in tracebacks are the guide's own
        exec(compile("\n" * (line - 1) + code, str(GUIDE), "exec"), module.__dict__)  # noqa: S102
