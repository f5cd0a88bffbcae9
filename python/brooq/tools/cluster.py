"""A throwaway PostgreSQL cluster built from the local server binaries: what `brooq demo`
starts without --dsn, and what the tests and the benchmark run on (tests/pgcluster.py).

initdb in a temporary directory, a free port on 127.0.0.1, pg_cron preloaded when it
is installed, trust auth for the superuser `postgres` (local connections only), and
everything removed on stop. initdb and postgres refuse to run as root, so as root they
run as the unprivileged user `postgres`.

A cluster can also start as a streaming standby of another (``start_standby``:
pg_basebackup -R), be promoted (``promote``), and die as its machine would (``kill``:
SIGKILL to the postmaster and every process it started): the failover tests' primary
and standby (tests/chaos/failover.py).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Self


class NoServer(RuntimeError):
    """No PostgreSQL server binaries (initdb, pg_ctl) were found."""


def bindir() -> Path:
    """The directory of initdb and postgres: $BROOQ_PG_BINDIR, pg_config, or the newest Debian one."""
    if env := os.environ.get("BROOQ_PG_BINDIR"):
        return Path(env)
    if pg_config := shutil.which("pg_config"):
        out = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, check=True)
        path = Path(out.stdout.strip())
        if (path / "initdb").exists():
            return path
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parent.parent.name))
    if not found:
        raise NoServer("no PostgreSQL server binaries found: apt-get install postgresql")
    return found[-1].parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def has_pg_cron(bin_dir: Path) -> bool:
    out = subprocess.run([str(bin_dir / "pg_config"), "--sharedir"], capture_output=True, text=True,
                         check=False)
    sharedir = Path(out.stdout.strip()) if out.returncode == 0 else bin_dir.parent / "share"
    return (sharedir / "extension" / "pg_cron.control").exists() or any(
        Path("/usr/share/postgresql").glob(f"{bin_dir.parent.name}/extension/pg_cron.control")
    )


def _parent_pid(stat: Path) -> int | None:
    """The parent's pid in /proc/<pid>/stat (None: the process is gone)."""
    try:
        text = stat.read_text()
    except OSError:
        return None
    return int(text.rsplit(")", 1)[1].split()[1])  # after "pid (comm) state"


class Cluster:
    """One PostgreSQL server in a temporary directory. Use as a context manager."""

    def __init__(self, *, settings: Mapping[str, str] | None = None, durable: bool = True) -> None:
        self.bin = bindir()
        self.port = free_port()
        self.root = Path(tempfile.mkdtemp(prefix="brooq-pg-"))
        self.data = self.root / "data"
        self.settings: dict[str, str] = {
            "listen_addresses": "127.0.0.1",
            "port": str(self.port),
            "unix_socket_directories": str(self.root),
            "max_connections": "200",
            "shared_buffers": "256MB",
        }
        if not durable:  # tests only: a crash loses nothing we care about
            self.settings |= {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}
        if has_pg_cron(self.bin):
            self.settings |= {"shared_preload_libraries": "pg_cron", "cron.database_name": "postgres"}
        self.settings |= dict(settings or {})
        self._as_postgres = os.geteuid() == 0
        self.killed = False  # kill() ran: no server to stop, and never one to start again

    @property
    def dsn(self) -> str:
        return self.dsn_for("postgres")

    def dsn_for(self, dbname: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{dbname}"

    def _run(self, *args: str) -> None:
        cmd = list(args)
        if self._as_postgres:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        subprocess.run(cmd, check=True, capture_output=True, text=True)

    def start(self) -> Self:
        if self._as_postgres:
            shutil.chown(self.root, "postgres")
        self._run(str(self.bin / "initdb"), "-D", str(self.data), "-U", "postgres",
                  "-A", "trust", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync")
        with open(self.data / "postgresql.auto.conf", "a") as conf:
            conf.writelines(f"{key} = '{value}'\n" for key, value in self.settings.items())
        self.pg_ctl("start", "-w", "-t", "60", "-l", str(self.log))
        return self

    def start_standby(self, primary: Cluster) -> Self:
        """Start as a streaming standby of ``primary``: pg_basebackup -R (primary_conninfo
        and standby.signal written) through a replication slot named after this port, then
        this cluster's settings over the primary's copied ones (its port, its socket
        directory, and synchronous_standby_names off: a standby promoted alone must not
        wait for a standby of its own)."""
        if self._as_postgres:
            shutil.chown(self.root, "postgres")
        self._run(str(self.bin / "pg_basebackup"), "-h", "127.0.0.1", "-p", str(primary.port),
                  "-U", "postgres", "-D", str(self.data), "-R", "-X", "stream", "-c", "fast",
                  "-C", "-S", f"standby_{self.port}", "--no-sync")
        settings = self.settings | {"synchronous_standby_names": ""}
        with open(self.data / "postgresql.auto.conf", "a") as conf:  # the last setting wins
            conf.writelines(f"{key} = '{value}'\n" for key, value in settings.items())
        self.pg_ctl("start", "-w", "-t", "60", "-l", str(self.log))
        return self

    def promote(self) -> None:
        """Promote this standby to a primary and wait until it accepts writes."""
        self.pg_ctl("promote", "-w", "-t", "60")

    def kill(self) -> None:
        """Kill the server as a crash of its machine would: SIGSTOP to the postmaster and
        every process it started, then SIGKILL to all (no backend says goodbye to its
        client, none is left running). The cluster is never started again (``stop`` only
        removes it)."""
        pid = int((self.data / "postmaster.pid").read_text().split()[0])
        os.kill(pid, signal.SIGSTOP)
        victims = [pid, *(int(stat.parent.name) for stat in Path("/proc").glob("[0-9]*/stat")
                          if _parent_pid(stat) == pid)]
        for sig in (signal.SIGSTOP, signal.SIGKILL):
            for victim in victims:
                try:
                    os.kill(victim, sig)
                except ProcessLookupError:
                    pass
        self.killed = True

    @property
    def log(self) -> Path:
        return self.root / "server.log"

    def restart(self, mode: str = "fast") -> None:
        """Restart the server (mode: smart, fast or immediate) and wait until it is up."""
        self.pg_ctl("restart", "-m", mode, "-w", "-t", "60", "-l", str(self.log))

    def pg_ctl(self, *args: str) -> None:
        """Run pg_ctl on this cluster. A command that starts the server must pass
        -l (see start and restart): the server would otherwise keep our output pipe."""
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), *args)

    def wait_ready(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ok = subprocess.run([str(self.bin / "pg_isready"), "-h", "127.0.0.1", "-p", str(self.port)],
                                capture_output=True, check=False)
            if ok.returncode == 0:
                return
            time.sleep(0.1)
        raise TimeoutError(f"PostgreSQL on port {self.port} not ready after {timeout}s")

    def stop(self) -> None:
        try:
            if (self.data / "postmaster.pid").exists() and not self.killed:
                self.pg_ctl("stop", "-m", "immediate", "-w")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
