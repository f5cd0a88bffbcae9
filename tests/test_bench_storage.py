"""The storage prototypes (bench/storage, docs/design/storage.md) must keep the promises
they are compared under: each shape drains what it was given, each job claimed once and
settled once, under two claimers at once. A shape that loses or doubles a job would make
its figures meaningless."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import Server

ROOT = Path(__file__).resolve().parent.parent


def test_each_storage_shape_drains_every_job_once(server: Server, tmp_path: Path) -> None:
    out = tmp_path / "storage.json"
    done = subprocess.run(
        [sys.executable, "-m", "bench.storage", "--dsn", server.admin_dsn, "--drain", "3000",
         "--batch", "20", "--consumers", "2", "--json", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads(out.read_text())
    for shape in ("row", "ring", "split"):
        assert data[shape]["jobs"] == 3000, (shape, data[shape])
        assert data[shape]["claimed_twice"] == 0, (shape, data[shape])
        assert data[shape]["fates"] == {"done": 3000}, (shape, data[shape])  # one SELECT of the fate
        assert data[shape]["wal_bytes_per_job"] > 0
