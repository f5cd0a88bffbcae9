"""`brooq worker --processes N`: N worker processes from one command, one shutdown.

One Python process runs its handlers and its loop under one GIL: a drain of short
jobs is bound by one core (docs/performance.md). The parent started by
`brooq worker --processes N` imports nothing of the user's: it starts N children,
each the same `brooq worker` command without --processes (so each imports the
module, reads the same options and variables, and runs one brooq.Worker), and
supervises them:

- SIGTERM or SIGINT to the parent: it sends SIGTERM to every child (each stops
  gracefully: no more claims, in-flight jobs finish within shutdown_grace) and waits
  for all of them; a second signal is passed on too, and stops them at once. The
  children run in a process group of their own, so a Ctrl-C in a terminal reaches
  them once, through the parent.
- A child that dies on its own (killed, crashed: a signal or an exit status other
  than 0, 1 and 2) is reported and restarted: after 1 s, doubling up to 30 s while it
  keeps dying within a minute of its start. Its jobs in flight return to the queue
  when their leases expire, as for any dead worker.
- A child that exits with status 1 or 2 (a configuration or usage error, no schema,
  no rights: the same command would fail again) is reported, the others are stopped
  gracefully, and the parent exits with that status. A child that exits 0 on its
  own is reported and not restarted.
- Each child watches a pipe from the parent (its stdin): when the parent dies
  without a word (kill -9), the pipe closes and the child stops gracefully.
- The parent exits with 0 when every child stopped with 0 (or was still starting, and
  ended by the SIGTERM itself, holding no job).

Children keep their own default names (host:pid:random); a --name NAME given on the
command line becomes NAME-1 .. NAME-N.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence

from brooq.lifecycle import stop_signals
from brooq.messages import _, _n

log = logging.getLogger("brooq.processes")

PIPE_VARIABLE = "BROOQ_PARENT_PIPE"  # set in a child's environment: stop when stdin closes
INDEX_VARIABLE = "BROOQ_PROCESS_INDEX"  # and its number, 1..N: the label of its progress lines
RESTART_MIN = 1.0
RESTART_MAX = 30.0
STABLE_AFTER = 60.0  # a child that lived this long restarts after RESTART_MIN again
POLL = 0.1


def child_argv(argv: Sequence[str], index: int) -> list[str]:
    """The `brooq worker` arguments of child ``index`` (1-based): without --processes,
    with NAME-index for a --name NAME, and log lines instead of a live progress line."""
    out: list[str] = []
    skip = False
    name: str | None = None
    for i, arg in enumerate(argv):
        if skip:
            skip = False
            continue
        if arg == "--processes":
            skip = True
            continue
        if arg.startswith("--processes="):
            continue
        if arg == "--name" and i + 1 < len(argv):
            name = argv[i + 1]
        elif arg.startswith("--name="):
            name = arg.partition("=")[2]
        out.append(arg)
    if name is not None:
        out.append(f"--name={name}-{index}")
    if "--progress=off" not in out and not ("--progress" in out and
                                             out[out.index("--progress") + 1:][:1] == ["off"]):
        out.append("--progress=log")  # N live lines on one terminal would overwrite each other
    return out


class Child:
    """One supervised worker process."""

    def __init__(self, index: int, argv: list[str]) -> None:
        self.index = index
        self.argv = argv
        self.proc: subprocess.Popen[bytes] | None = None
        self.started_at = 0.0
        self.failures = 0
        self.restart_at: float | None = None

    def start(self) -> None:
        env = dict(os.environ, **{PIPE_VARIABLE: "1", INDEX_VARIABLE: str(self.index)})
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "brooq.tools", *self.argv], stdin=subprocess.PIPE, env=env,
            start_new_session=True)  # a group of its own: a terminal's Ctrl-C reaches it once, from us
        self.started_at = time.monotonic()
        self.restart_at = None
        log.info(_("processes.started", index=self.index, pid=self.proc.pid))

    def signal(self, signum: int) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                self.proc.send_signal(signum)
            except ProcessLookupError:
                pass


def describe_status(code: int) -> str:
    if code < 0:
        try:
            return _("processes.killed_by", signal=signal.Signals(-code).name)
        except ValueError:
            return _("processes.killed_by_number", number=-code)
    return _("processes.exit_status", code=code)


class Supervisor:
    """Starts the children, passes signals on, restarts or reports the ones that die."""

    def __init__(self, argv: Sequence[str], processes: int) -> None:
        self.children = [Child(i, child_argv(argv, i)) for i in range(1, processes + 1)]
        self.signals = 0  # signals received, handled in the main loop
        self.stopping = False
        self.passed_on = 0
        self.status = 0

    def _on_signal(self) -> None:
        self.signals += 1

    def run(self) -> int:
        try:
            with stop_signals(self._on_signal):
                for child in self.children:
                    child.start()
                log.info(_n("processes.running", len(self.children)))
                while self._turn(time.monotonic()):
                    time.sleep(POLL)
        finally:
            for child in self.children:  # only after an error of ours: do not leave them behind
                if child.proc is not None and child.proc.poll() is None:
                    child.signal(signal.SIGTERM)
                    child.proc.wait()
        return self.status

    def stop(self, why: str) -> None:
        if not self.stopping:
            log.info(_n("processes.stopping", self.alive(), why=why))
        self.stopping = True

    def alive(self) -> int:
        return sum(1 for c in self.children if c.proc is not None and c.proc.poll() is None)

    def _turn(self, now: float) -> bool:
        """One look at signals and children; False when every child is gone for good."""
        if self.signals > self.passed_on:
            self.stop(_("processes.why_signal"))
            for _signal in range(self.signals - self.passed_on):
                for child in self.children:
                    child.signal(signal.SIGTERM)  # the second one makes a worker stop at once
            self.passed_on = self.signals
        running = False
        for child in self.children:
            proc = child.proc
            if proc is None:
                continue
            code = proc.poll()
            if code is None:
                running = True
                continue
            if child.restart_at is not None:  # dead, waiting for its restart
                if self.stopping:
                    child.proc = None
                elif now >= child.restart_at:
                    child.start()
                    running = True
                else:
                    running = True
                continue
            self._ended(child, code, now)
            running = running or child.restart_at is not None
        return running

    def _ended(self, child: Child, code: int, now: float) -> None:
        pid = child.proc.pid if child.proc is not None else 0
        if self.stopping:
            # -SIGTERM: our signal reached it before its handler was installed (still
            # starting, so it held no job): a clean stop too
            if code not in (0, -signal.SIGTERM):
                log.warning(_("processes.stopped", index=child.index, pid=pid,
                              status=describe_status(code)))
                self.status = self.status or (code if code > 0 else 1)
            child.proc = None
            return
        if code in (1, 2):
            log.error(_("processes.failed", index=child.index, pid=pid,
                        status=describe_status(code)))
            self.status = code
            child.proc = None
            self.stop(_("processes.why_failed"))
            for other in self.children:
                other.signal(signal.SIGTERM)
            return
        if code == 0:
            log.warning(_("processes.stopped_by_itself", index=child.index, pid=pid))
            child.proc = None
            return
        child.failures = 1 if now - child.started_at >= STABLE_AFTER else child.failures + 1
        delay = min(RESTART_MAX, RESTART_MIN * 2 ** (child.failures - 1))
        child.restart_at = now + delay
        log.error(_("processes.died", index=child.index, pid=pid, status=describe_status(code),
                    delay=delay))


def run_processes(argv: Sequence[str], processes: int) -> int:
    """Run `brooq worker` ``processes`` times under one supervisor; its exit status."""
    return Supervisor(argv, processes).run()


def progress_label() -> str:
    """In a child of run_processes: the label of its progress lines ("worker process 2: "),
    so that N children's lines in one log tell apart; else ""."""
    index = os.environ.pop(INDEX_VARIABLE, "")
    return _("progress.process", index=index) if index.isdigit() else ""


def watch_parent(stop: Callable[[], None]) -> None:
    """In a child of run_processes: call ``stop`` when the parent's pipe (stdin) closes."""
    if os.environ.get(PIPE_VARIABLE) != "1":
        return
    os.environ.pop(PIPE_VARIABLE)

    def watch() -> None:
        try:  # the raw descriptor: a daemon thread in a buffered read aborts the interpreter's exit
            while os.read(0, 4096):
                pass
        except OSError:
            pass
        log.warning(_("processes.parent_gone"))
        stop()

    threading.Thread(target=watch, name="brooq-parent-pipe", daemon=True).start()
