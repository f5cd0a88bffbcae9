"""Worker subprocesses: start them, read what they report, measure them, stop them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Self

from bench.progress import Progress

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class WorkerState:
    proc: subprocess.Popen[str]
    ready: threading.Event = field(default_factory=threading.Event)
    count: int = 0
    first: int = 0
    last: int = 0
    stderr: deque[str] = field(default_factory=lambda: deque(maxlen=30))


class WorkerFailed(RuntimeError):
    pass


class Workers:
    """P copies of one worker command, each reporting on stdout (see workers/report.py)."""

    def __init__(self, cmd: list[str], procs: int, cwd: Path = ROOT) -> None:
        self.starts: dict[int, int] = {}  # seq -> handler start (monotonic ns)
        self._lock = threading.Lock()
        # this checkout's package first: the bench measures the tree it runs in, whatever
        # bench/.venv's editable install points at
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "python"), str(ROOT)]),
                   PYTHONUNBUFFERED="1")
        self.workers: list[WorkerState] = []
        for _ in range(procs):
            p = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 start_new_session=True)
            w = WorkerState(p)
            self.workers.append(w)
            threading.Thread(target=self._read_out, args=(w,), daemon=True).start()
            threading.Thread(target=self._read_err, args=(w,), daemon=True).start()

    def _read_out(self, w: WorkerState) -> None:
        assert w.proc.stdout is not None
        for line in w.proc.stdout:
            kind, _, rest = line.partition(" ")
            if kind == "P":
                c, f, last = rest.split()
                w.count, w.first, w.last = int(c), int(f), int(last)
            elif kind == "L":
                nums = rest.split()
                with self._lock:
                    for i in range(0, len(nums) - 1, 2):
                        self.starts.setdefault(int(nums[i]), int(nums[i + 1]))
            elif kind.strip() == "R":
                w.ready.set()

    def _read_err(self, w: WorkerState) -> None:
        assert w.proc.stderr is not None
        for line in w.proc.stderr:
            w.stderr.append(line.rstrip())

    def check_alive(self) -> None:
        for w in self.workers:
            if w.proc.poll() is not None:
                time.sleep(0.2)  # let the stderr reader catch up
                tail = "\n    ".join(w.stderr) or "(no output)"
                raise WorkerFailed(f"worker exited with {w.proc.returncode}:\n    {tail}")

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        for w in self.workers:
            while not w.ready.wait(0.1):
                self.check_alive()
                if time.monotonic() > deadline:
                    raise WorkerFailed(f"worker not ready after {timeout:.0f}s")

    @property
    def count(self) -> int:
        return sum(w.count for w in self.workers)

    def span(self) -> tuple[int, int, int]:
        """(jobs started, first start, last start) over all processes; times in ns."""
        started = [w for w in self.workers if w.count]
        if not started:
            return 0, 0, 0
        return (sum(w.count for w in started), min(w.first for w in started),
                max(w.last for w in started))

    def wait_count(self, n: int, cap: float, progress: Progress) -> bool:
        """Wait until n jobs started or cap seconds passed; True if all n started."""
        t0 = time.monotonic()
        while True:
            done = self.count
            progress.update(f"{done:,}/{n:,} jobs", done, t0)
            if done >= n:
                return True
            if time.monotonic() - t0 > cap:
                return False
            self.check_alive()
            time.sleep(0.05)

    def take_starts(self) -> dict[int, int]:
        """The first starts reported since the last call (seq -> monotonic ns), forgotten
        here: a long run keeps only what it has not matched yet."""
        with self._lock:
            taken, self.starts = self.starts, {}
        taken.pop(-1, None)  # a start reported without a seq (a retry, in the soak)
        return taken

    def rss_mib(self) -> float:
        """The resident set (VmRSS) of the worker processes now, summed, in MiB."""
        total = 0.0
        for w in self.workers:
            try:
                for line in Path(f"/proc/{w.proc.pid}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) / 1024
            except OSError:
                pass
        return total

    def peak_rss_mib(self) -> list[float]:
        """VmHWM (peak resident set) of each worker process, in MiB."""
        out = []
        for w in self.workers:
            try:
                for line in Path(f"/proc/{w.proc.pid}/status").read_text().splitlines():
                    if line.startswith("VmHWM:"):
                        out.append(int(line.split()[1]) / 1024)
            except OSError:
                pass
        return out

    def stop(self, grace: float = 10.0) -> None:
        for w in self.workers:
            if w.proc.poll() is None:
                with_group(w.proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        for w in self.workers:
            try:
                w.proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with_group(w.proc.pid, signal.SIGKILL)
                w.proc.wait()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def with_group(pid: int, sig: signal.Signals) -> None:
    """Signal the worker's own process group (it was started in a new session)."""
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        pass
    except PermissionError as e:  # pragma: no cover
        print(f"bench: cannot signal {pid}: {e}", file=sys.stderr)
