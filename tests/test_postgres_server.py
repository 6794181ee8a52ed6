"""The test PostgreSQL server: listens on 127.0.0.1 only, creates the databases asked for, and
is gone (its PID too) once the block ends."""

from __future__ import annotations

import os
import socket
import subprocess

from postgres_server import PostgresServer, postgres_server


def _databases(server: PostgresServer) -> set[str]:
    listed = subprocess.run(
        [
            str(server.bindir / "psql"), "-h", server.host, "-p", str(server.port),
            "-U", server.user, "-d", "postgres", "-Atc", "SELECT datname FROM pg_database",
        ],
        capture_output=True, text=True, check=True, timeout=60,
    )
    return set(listed.stdout.split())


def _accepts(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.settimeout(2)
        return probe.connect_ex((host, port)) == 0


def test_server_creates_databases_listens_locally_and_stops_by_pid(postgres: PostgresServer):
    with postgres_server(databases=("alpha",)) as server:
        assert server.host == "127.0.0.1"
        assert _accepts(server.host, server.port)
        server.create_database("beta")
        assert {"alpha", "beta"} <= _databases(server)
        assert server.dsn("alpha").endswith(f"@127.0.0.1:{server.port}/alpha")
        pid = server.pid
        os.kill(pid, 0)  # alive
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        pass
    else:
        raise AssertionError(f"server PID {pid} still alive after the block")
    assert not _accepts(server.host, server.port)


def test_session_server_has_the_default_databases(postgres: PostgresServer):
    assert {"litmus_catalog", "dagster"} <= _databases(postgres)
