"""The PostgreSQL server of the tests and the benchmark, chosen by $BROOQ_TEST_POSTGRES:

- unset or ``local``: the throwaway cluster built from the local server binaries
  (brooq.tools.cluster, the one `brooq demo` starts without --dsn);
- ``container:17`` (a major): the image ``brooq-test/postgres:17`` that
  ``tests/images/build 17`` makes from Debian's packages, in a container;
- ``container:postgres:17`` (any other image, e.g. an official one from Docker Hub):
  that image, pulled by Docker if it is not present.

A container runs through testcontainers on the host's network (``network_mode=host``),
listening on 127.0.0.1 only, on a free port; it is removed on stop. pg_cron is
preloaded when the image has it (brooq-test images do; the official ones do not).
Its name is ``$BROOQ_CONTAINER_PREFIX-<port>`` (default brooq-test-<port>): .ci/run
gives a prefix of its own and removes what a killed run may have left.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Self

import psycopg

from brooq.tools.cluster import Cluster, NoServer, bindir, free_port, has_pg_cron

__all__ = ["Cluster", "Container", "NoServer", "bindir", "choice", "client_tool", "free_port",
           "has_pg_cron", "make_server", "start_server"]

BUILT = "brooq-test/postgres"  # the images of tests/images/build


def choice() -> str:
    """$BROOQ_TEST_POSTGRES, checked: 'local' or 'container:<major or image>'."""
    value = os.environ.get("BROOQ_TEST_POSTGRES", "").strip() or "local"
    if value != "local" and not (value.startswith("container:") and value != "container:"):
        raise ValueError(f"BROOQ_TEST_POSTGRES={value!r}: expected 'local', 'container:<major>' "
                         "(an image of tests/images/build, e.g. container:17) or "
                         "'container:<image>' (e.g. container:postgres:17)")
    return value


def image_of(spec: str) -> str:
    """'17' -> 'brooq-test/postgres:17'; any other name is an image as it is."""
    return f"{BUILT}:{spec}" if spec.isdigit() else spec


class Container:
    """One PostgreSQL server in a container (testcontainers). Use as a context manager.

    The same surface as Cluster where the tests and the benchmark use it: ``dsn``,
    ``dsn_for``, ``port``, ``start``, ``stop``; plus ``tool`` (a client program of the
    server's own version, run inside the container: pg_dump refuses a newer server)."""

    def __init__(self, spec: str, *, settings: Mapping[str, str] | None = None,
                 durable: bool = True) -> None:
        self.image = image_of(spec)
        self.port = free_port()
        self.settings: dict[str, str] = {
            "listen_addresses": "127.0.0.1",  # the host's network: loopback only
            "port": str(self.port),
            "max_connections": "200",
            "shared_buffers": "256MB",
        }
        if not durable:  # tests only: a crash loses nothing we care about
            self.settings |= {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}
        self.settings |= dict(settings or {})
        self._container: Any = None
        self.version = ""  # server_version, once started
        self.extensions: dict[str, bool] = {}  # pg_cron, pgtap, plpgsql_check, plproxy: available?

    @property
    def dsn(self) -> str:
        return self.dsn_for("postgres")

    def dsn_for(self, dbname: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{dbname}"

    @property
    def bin(self) -> Path:
        """The local client programs (pgbench, psql): they speak to any newer server, unlike
        pg_dump (see ``tool``)."""
        return bindir()

    @property
    def id(self) -> str:
        return str(self._container.get_wrapped_container().id)

    def describe(self) -> str:
        have = ", ".join(f"{name} {'yes' if ok else 'NO'}" for name, ok in self.extensions.items())
        return f"PostgreSQL {self.version} in container {self.image} on port {self.port} ({have})"

    def start(self) -> Self:
        os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")  # no reaper image to pull
        try:
            import docker
            from testcontainers.core.container import DockerContainer
        except ImportError as e:
            raise NoServer(f"BROOQ_TEST_POSTGRES=container:...: {e.name} is not installed "
                           "(pip install testcontainers; .ci/bootstrap installs it)") from e
        try:
            client = docker.from_env()
            client.ping()
        except Exception as e:  # docker.errors.DockerException and the socket's own errors
            raise NoServer(f"no Docker daemon answers ({e}): apt-get install docker.io, then "
                           "start dockerd (or systemctl start docker)") from e
        try:
            client.images.get(self.image)
        except docker.errors.ImageNotFound:
            if self.image.startswith(BUILT + ":"):
                major = self.image.split(":", 1)[1]
                raise NoServer(f"the image {self.image} is not built: bash tests/images/build {major}"
                               " (tests/run builds it)") from None
            # any other image: Docker pulls it below (Docker Hub or the user's registry)
        finally:
            client.close()
        command = ["postgres", *(f"-c{key}={value}" for key, value in self.settings.items())]
        self._container = (DockerContainer(self.image)
                           .with_command(command)
                           .with_env("POSTGRES_HOST_AUTH_METHOD", "trust")
                           .with_name(f"{os.environ.get('BROOQ_CONTAINER_PREFIX', 'brooq-test')}"
                                      f"-{self.port}")
                           .with_kwargs(network_mode="host", shm_size="1g", stop_signal="SIGINT"))
        try:
            self._container.start()
        except Exception as e:
            self._container = None
            raise NoServer(f"could not start a container of {self.image}: {e}") from e
        try:
            self.wait_ready()
            with psycopg.connect(self.dsn, autocommit=True) as conn:
                available = {name for (name,) in conn.execute(
                    "select name from pg_available_extensions"
                    " where name in ('pg_cron', 'pgtap', 'plpgsql_check', 'plproxy')")}
                self.extensions = {name: name in available
                                   for name in ("pg_cron", "pgtap", "plpgsql_check", "plproxy")}
                if self.extensions["pg_cron"]:
                    # pg_cron's database is 'postgres' by default; PostgreSQL 15 refuses
                    # ALTER SYSTEM of cron.* before the library is loaded
                    conn.execute("alter system set shared_preload_libraries = 'pg_cron'")
            if self.extensions["pg_cron"]:
                self.restart()
            with psycopg.connect(self.dsn, autocommit=True) as conn:
                self.version = str(conn.execute("show server_version").fetchone()[0])  # type: ignore[index]
        except BaseException:
            self.stop()
            raise
        return self

    def restart(self) -> None:
        """Restart the server (the container: SIGINT, a fast shutdown) and wait until it is up."""
        self._container.get_wrapped_container().restart(timeout=60)
        self.wait_ready()

    def logs(self) -> str:
        try:
            return bytes(self._container.get_wrapped_container().logs()).decode(errors="replace")
        except Exception as e:  # the container is gone
            return f"(no logs: {e})"

    def wait_ready(self, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                with psycopg.connect(self.dsn, connect_timeout=2):
                    return
            except psycopg.OperationalError as e:
                state = self._container.get_wrapped_container()
                state.reload()
                if state.status == "exited":
                    raise NoServer(f"the container of {self.image} exited:\n{self.logs()}") from e
                if time.monotonic() > deadline:
                    raise TimeoutError(f"PostgreSQL in {self.image} (port {self.port}) not ready "
                                       f"after {timeout:.0f}s: {e}\n{self.logs()}") from e
                time.sleep(0.2)

    def tool(self, program: str) -> list[str]:
        """The command that runs a client program of the server's version, in the container
        (the DSN's host and port work there: the container shares the host's network)."""
        return ["docker", "exec", "-i", "-u", "postgres", self.id, program]

    def stop(self) -> None:
        if self._container is not None:
            try:
                self._container.stop()  # removed, with its data
            finally:
                self._container = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def make_server(*, durable: bool, settings: Mapping[str, str] | None = None,
                which: str | None = None) -> Cluster | Container:
    """The server $BROOQ_TEST_POSTGRES (or ``which``) names, not started yet: a throwaway
    cluster or a container (both start on ``start()`` or ``with``)."""
    which = which or choice()
    if which == "local":
        return Cluster(durable=durable, settings=settings)
    return Container(which.removeprefix("container:"), durable=durable, settings=settings)


def start_server(*, durable: bool, settings: Mapping[str, str] | None = None) -> Cluster | Container:
    """The server $BROOQ_TEST_POSTGRES names, started."""
    return make_server(durable=durable, settings=settings).start()


def client_tool(program: str, server: Cluster | Container | None) -> list[str]:
    """The local client program, or the container's when the server is one (pg_dump
    refuses to dump a server newer than itself)."""
    if isinstance(server, Container):
        return server.tool(program)
    return [program]


if __name__ == "__main__":  # python tests/pgcluster.py: start the chosen server, print it, stop it
    server = start_server(durable=False)
    try:
        print(server.describe() if isinstance(server, Container) else f"local cluster {server.bin}")
    finally:
        server.stop()
