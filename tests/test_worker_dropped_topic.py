"""A topic dropped under a running worker: the worker keeps serving its other topics,
and says once, at WARNING, which it stopped serving (before, the claim's "cannot claim
from topic ...: it does not exist" stopped the whole worker). A real `brooq worker`
process, a real `brooq drop-topic`."""

from __future__ import annotations

import os
import signal
import subprocess
import textwrap
import time
from pathlib import Path

import psycopg
from helpers import COMMAND, brooq_cli, declare, wait_for

APP = """
    import datetime

    import brooq

    worker = brooq.Worker(name="w", poll_interval=datetime.timedelta(milliseconds=100))

    @worker.handler("keep")
    def keep(job: brooq.Job) -> object:
        return {"kept": job.payload}

    @worker.handler("retired")
    def retired(job: brooq.Job) -> None:
        return None
"""


def states(dsn: str, topic: str) -> list[str]:
    with psycopg.connect(dsn) as conn:
        return [s for (s,) in conn.execute("select state::text from brooq.job where topic = %s order by id",
                                           [topic]).fetchall()]


def enqueue(dsn: str, topic: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("select brooq.enqueue(%s, '{}')", [topic])


def test_a_dropped_topic_stops_only_its_own_service(db: str, tmp_path: Path) -> None:
    (tmp_path / "dropapp.py").write_text(textwrap.dedent(APP))
    declare(db, "keep")
    declare(db, "retired")
    env = {k: v for k, v in os.environ.items() if not k.startswith("BROOQ_")}
    proc = subprocess.Popen([*COMMAND, "worker", "dropapp:worker", "--dsn", db, "--progress", "off"],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        enqueue(db, "keep")
        wait_for(lambda: states(db, "keep") == ["done"], timeout=20, what="the first keep job")
        dropped = brooq_cli("drop-topic", "retired", dsn=db)
        assert dropped.returncode == 0, dropped.stderr
        time.sleep(0.5)  # a few polls: each claim meets the dropped topic
        enqueue(db, "keep")
        wait_for(lambda: states(db, "keep") == ["done", "done"] or proc.poll() is not None, timeout=20,
                 what="the second keep job")
        assert proc.poll() is None, "the worker exited"
        assert states(db, "keep") == ["done", "done"]
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "cannot claim" not in err, err
    said = [line for line in err.splitlines() if "no longer exists" in line]
    assert len(said) == 1 and said[0].endswith(
        "WARNING brooq.worker: worker w: topic retired no longer exists (dropped while this worker "
        "served it): stopped serving it, still serving keep"), err
