"""A real Redis server for tests (the dagster-celery broker), started and stopped by the test.

    from redis_server import redis_server

    with redis_server() as server:
        server.url(0)        # "redis://127.0.0.1:PORT/0"
        server.pid

    # pytest: the fixture ``redis_broker`` (import it into the test module) yields one.

``redis-server`` (Debian's package; ``LITMUS_REDIS_SERVER`` names another binary) listens on
127.0.0.1 only, at a free port, with no persistence (no RDB snapshot, no append-only file)
and a fresh temporary folder as its working directory; it is stopped by its PID at exit
(SIGTERM, then SIGKILL of that PID). Without the binary the tests that need it are skipped
with the reason, except when the environment variable ``CI`` is set: then they fail (dev.sh
installs ``redis-server`` as root), the policy of tests/postgres_server.py.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from local_processes import free_port, stop_process

HOST = "127.0.0.1"
BINARY_ENV = "LITMUS_REDIS_SERVER"


class RedisUnavailable(RuntimeError):
    """No redis-server binary on this machine."""


@dataclass(frozen=True)
class RedisServer:
    host: str
    port: int
    pid: int

    def url(self, database: int = 0) -> str:
        return f"redis://{self.host}:{self.port}/{database}"


def find_binary() -> Path:
    chosen = os.environ.get(BINARY_ENV) or shutil.which("redis-server")
    if chosen and Path(chosen).is_file():
        return Path(chosen)
    raise RedisUnavailable(
        "no redis-server binary: install redis-server (`./dev.sh test` does as root) or set "
        f"{BINARY_ENV}"
    )


def _answers_ping(port: int) -> bool:
    try:
        with socket.create_connection((HOST, port), timeout=1) as connection:
            connection.sendall(b"PING\r\n")
            return connection.recv(64).startswith(b"+PONG")
    except OSError:
        return False


@contextmanager
def redis_server() -> Iterator[RedisServer]:
    """Start a throwaway server; stop it by PID on exit."""
    binary = find_binary()
    root = Path(tempfile.mkdtemp(prefix="litmus-redis-"))
    process: subprocess.Popen | None = None
    try:
        for attempt in range(3):  # a free port can be taken between probe and start
            port = free_port()
            with (root / "server.log").open("ab") as log:
                process = subprocess.Popen(
                    [
                        str(binary), "--bind", HOST, "--port", str(port), "--dir", str(root),
                        "--save", "", "--appendonly", "no", "--daemonize", "no",
                        "--protected-mode", "yes",
                    ],
                    stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                )  # fmt: skip
            deadline = time.monotonic() + 30
            while process.poll() is None and time.monotonic() < deadline:
                if _answers_ping(port):
                    break
                time.sleep(0.1)
            if process.poll() is None and _answers_ping(port):
                break
            stop_process(process, timeout=10)
            process = None
            if attempt == 2:
                log_text = (root / "server.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"redis-server did not start: {log_text}")
        assert process is not None
        yield RedisServer(host=HOST, port=port, pid=process.pid)
    finally:
        if process is not None:
            stop_process(process, timeout=10)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def redis_broker() -> Iterator[RedisServer]:
    try:
        find_binary()
    except RedisUnavailable as missing:
        if os.environ.get("CI"):
            pytest.fail(f"CI needs a Redis server: {missing}")
        pytest.skip(str(missing))
    with redis_server() as server:
        yield server
