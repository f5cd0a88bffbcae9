"""How to install an optional extra of brooq (metrics, dashboard, otel).

brooq is on no package index: `pip install 'brooq[dashboard]'` finds nothing. What
works is the checkout (`pip install -e '.[dashboard]'`), the wheel built from it
(`pip install './brooq-X-py3-none-any.whl[dashboard]'`), or the extra's packages
alone, as the installed package's metadata lists them.
"""

from __future__ import annotations

import importlib.metadata
import re

from brooq._version import __version__


def requirements(extra: str) -> list[str]:
    """The requirements of ``extra`` in the installed package's metadata ([] without it)."""
    try:
        required = importlib.metadata.requires("brooq") or []
    except importlib.metadata.PackageNotFoundError:
        return []
    marker = re.compile(rf"""extra\s*==\s*["']{re.escape(extra)}["']""")
    return [r.split(";")[0].strip() for r in required if marker.search(r)]


def install_hint(extra: str) -> str:
    """What to run to get ``extra``: from a checkout, from a wheel, or its packages alone."""
    hint = (f"in a brooq checkout pip install -e '.[{extra}]', from a wheel "
            f"pip install './brooq-{__version__}-py3-none-any.whl[{extra}]'")
    packages = requirements(extra)
    if packages:
        hint += ", or its packages alone: pip install " + " ".join(f"'{p}'" for p in packages)
    return hint
