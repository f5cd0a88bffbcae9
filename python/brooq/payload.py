"""JSON encoding of payloads and results: anything json.dumps takes, plus dataclasses.

Dataclass instances (also nested in lists and dicts) become objects through
``dataclasses.asdict``. NaN and infinities are refused: jsonb cannot store them.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from psycopg.types.json import Jsonb


def _default(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def to_json(value: Any) -> str:
    """The JSON text of a payload or result; TypeError/ValueError when it has none."""
    return json.dumps(value, default=_default, allow_nan=False, separators=(",", ":"))


def jsonb(value: Any) -> Jsonb:
    """A psycopg jsonb parameter for a payload."""
    return Jsonb(value, dumps=to_json)
