"""The test Redis server: answers on 127.0.0.1 only, keeps nothing on disk, and is gone (its
PID too) once the block ends; without the binary the tests that need it skip, or fail in CI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import redis
from redis_server import RedisServer, redis_broker, redis_server  # noqa: F401 (a fixture)

TESTS = Path(__file__).resolve().parent


def test_server_listens_locally_keeps_nothing_and_stops_by_pid(
    redis_broker: RedisServer,  # noqa: F811 (the fixture imported above)
) -> None:
    with redis_server() as server:
        assert server.url(3) == f"redis://127.0.0.1:{server.port}/3"
        client = redis.Redis.from_url(server.url(0))
        assert client.ping()
        assert client.config_get("bind") == {"bind": "127.0.0.1"}
        assert client.config_get("save") == {"save": ""}
        assert client.config_get("appendonly") == {"appendonly": "no"}
        directory = Path(client.config_get("dir")["dir"])
        assert directory.name.startswith("litmus-redis-")
        client.close()
        pid = server.pid
        os.kill(pid, 0)  # alive
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert not directory.exists()


@pytest.mark.parametrize(
    ("ci", "outcome"),
    [("", "1 skipped"), ("1", "1 error")],  # a fixture that fails errs its test
)
def test_without_the_binary_the_broker_skips_locally_and_fails_in_ci(
    ci: str, outcome: str, tmp_path: Path
) -> None:
    (tmp_path / "test_needs_broker.py").write_text(
        "from redis_server import redis_broker  # noqa: F401\n"
        "def test_needs_broker(redis_broker):\n    pass\n"
    )
    env = {**os.environ, "LITMUS_REDIS_SERVER": str(tmp_path / "missing"), "CI": ci}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "-p", "no:xdist",
         "--rootdir", str(tmp_path), "-o", f"pythonpath={TESTS}", str(tmp_path)],
        capture_output=True, text=True, check=False, timeout=300, cwd=tmp_path, env=env,
    )  # fmt: skip
    assert outcome in done.stdout, done.stdout[-2000:]
    assert "no redis-server binary" in done.stdout
    assert ("CI needs a Redis server" in done.stdout) == bool(ci)
