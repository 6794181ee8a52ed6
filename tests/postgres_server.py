"""A real PostgreSQL server for tests, started and stopped by the test run itself.

Interface (kept stable: other branches use it):

    from postgres_server import postgres_server

    with postgres_server(databases=("litmus_catalog", "dagster")) as server:
        server.dsn("dagster")     # "postgresql://litmus@127.0.0.1:PORT/dagster"
        server.libpq("dagster")   # "host=127.0.0.1 port=PORT user=litmus dbname=dagster"
        server.create_database("another")
        server.host, server.port, server.user, server.pid

    # pytest: the session fixture ``postgres`` (registered in tests/conftest.py) yields one
    # PostgresServer with the databases "litmus_catalog" and "dagster"; a test creates more
    # with ``postgres.create_database(name)``.

The server is initdb'd in a fresh temporary folder (as the ``postgres`` user when the tests
run as root: initdb refuses root; as the current user otherwise), trusts local connections,
listens on 127.0.0.1 only at a free port, and is stopped by its PID at exit (``pg_ctl stop -m
fast``, then SIGKILL of that PID if it is still there). Its binaries come from
``LITMUS_PG_BINDIR``, else the ``initdb`` on PATH, else the newest
``/usr/lib/postgresql/*/bin``. Without them the tests that need it are skipped with the reason,
except when the environment variable ``CI`` is set: then they fail (CI installs the server,
see dev.sh).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import pytest
from local_processes import free_port

SUPERUSER = "litmus"
HOST = "127.0.0.1"
DEFAULT_DATABASES = ("litmus_catalog", "dagster")


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL server binaries on this machine."""


@dataclass
class PostgresServer:
    """A running server: where it listens, its superuser (trusted, no password), its PID."""

    host: str
    port: int
    user: str
    pid: int
    bindir: Path

    def dsn(self, database: str) -> str:
        return f"postgresql://{self.user}@{self.host}:{self.port}/{database}"

    def libpq(self, database: str) -> str:
        """The key=value form (what DuckDB's postgres and ducklake extensions take)."""
        return f"host={self.host} port={self.port} user={self.user} dbname={database}"

    def create_database(self, name: str) -> None:
        _run(
            [
                str(self.bindir / "createdb"),
                "-h", self.host, "-p", str(self.port), "-U", self.user, name,
            ],
            as_server_user=False,
        )


def find_bindir() -> Path:
    """The folder holding initdb, pg_ctl and postgres (see the module doc for the order)."""
    candidates: list[Path] = []
    if os.environ.get("LITMUS_PG_BINDIR"):
        candidates.append(Path(os.environ["LITMUS_PG_BINDIR"]))
    on_path = shutil.which("initdb")
    if on_path:
        candidates.append(Path(on_path).resolve().parent)
    installed = Path("/usr/lib/postgresql")
    if installed.is_dir():
        versions = [p for p in installed.iterdir() if p.name.isdigit()]
        candidates += [p / "bin" for p in sorted(versions, key=lambda p: -int(p.name))]
    for bindir in candidates:
        if all((bindir / tool).is_file() for tool in ("initdb", "pg_ctl", "postgres")):
            return bindir
    raise PostgresUnavailable(
        "no PostgreSQL server binaries (initdb, pg_ctl, postgres): install postgresql-15 "
        "(`./dev.sh test` does as root) or set LITMUS_PG_BINDIR"
    )


def _as_root() -> bool:
    return os.geteuid() == 0


def _run(command: list[str], *, as_server_user: bool) -> None:
    if as_server_user and _as_root():
        command = ["runuser", "-u", "postgres", "--", *command]
    done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(
            f"{' '.join(command)} exited {done.returncode}: {done.stderr.strip()[-2000:]}"
        )


def _postmaster_pid(data_dir: Path) -> int:
    """The server's PID from ``postmaster.pid`` (its first line); read as root or as owner."""
    pid_file = data_dir / "postmaster.pid"
    return int(pid_file.read_text().split("\n", 1)[0])


@contextmanager
def postgres_server(databases: tuple[str, ...] = DEFAULT_DATABASES) -> Iterator[PostgresServer]:
    """Start a throwaway server with ``databases`` created; stop it by PID on exit."""
    bindir = find_bindir()
    root = Path(tempfile.mkdtemp(prefix="litmus-pg-"))
    if _as_root():
        shutil.chown(root, user="postgres", group="postgres")
    data_dir = root / "data"
    pid: int | None = None
    try:
        _run(
            [
                str(bindir / "initdb"), "-D", str(data_dir), "-U", SUPERUSER,
                "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync",
            ],
            as_server_user=True,
        )
        port = 0
        for attempt in range(3):  # a free port can be taken between probe and start
            port = free_port()
            options = (
                f"-c listen_addresses={HOST} -p {port} -c unix_socket_directories={root} "
                "-c fsync=off -c max_connections=100"
            )
            try:
                _run(
                    [
                        str(bindir / "pg_ctl"), "-D", str(data_dir), "-o", options,
                        "-l", str(root / "server.log"), "-w", "-t", "60", "start",
                    ],
                    as_server_user=True,
                )
                break
            except RuntimeError:
                if attempt == 2:
                    raise
        pid = _postmaster_pid(data_dir)
        server = PostgresServer(host=HOST, port=port, user=SUPERUSER, pid=pid, bindir=bindir)
        for name in databases:
            server.create_database(name)
        yield server
    finally:
        if pid is not None:
            _stop(bindir, data_dir, pid)
        shutil.rmtree(root, ignore_errors=True)


def _stop(bindir: Path, data_dir: Path, pid: int) -> None:
    """``pg_ctl stop -m fast``; the PID killed when it is still alive after that."""
    with suppress(RuntimeError, subprocess.TimeoutExpired):
        _run(
            [str(bindir / "pg_ctl"), "-D", str(data_dir), "-m", "fast", "-w", "-t", "30", "stop"],
            as_server_user=True,
        )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    with suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """One server for the session (per xdist worker), with :data:`DEFAULT_DATABASES`."""
    try:
        find_bindir()
    except PostgresUnavailable as missing:
        if os.environ.get("CI"):
            pytest.fail(f"CI needs a PostgreSQL server: {missing}")
        pytest.skip(str(missing))
    with postgres_server() as server:
        yield server
