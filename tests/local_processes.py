"""What the test servers and deployments started as OS processes share: a free port on the
loopback address, and stopping a process by its PID."""

from __future__ import annotations

import signal
import socket
import subprocess

HOST = "127.0.0.1"


def free_port() -> int:
    """A TCP port nothing listens on at :data:`HOST` right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


def stop_process(process: subprocess.Popen, *, timeout: float) -> None:
    """SIGTERM to the process's PID, SIGKILL of that PID if it has not ended in ``timeout``
    seconds."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
