"""A worker in a fresh interpreter (``python -m MODULE``) that talks over its stdin and stdout.

Not a fork: the caller may hold a DuckDB warehouse and its threads, which must not be forked,
and a fresh interpreter does not re-run the caller's main module as ``multiprocessing``'s
spawn would. Its error output goes to a temporary file, read back only when it ends badly
(a pipe could fill up)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path


class ModuleProcess:
    def __init__(self, module: str) -> None:
        self.errors = tempfile.TemporaryFile()  # noqa: SIM115 (closed in stop())
        # `litmus` importable in the worker wherever this process found it
        package_root = str(Path(__file__).resolve().parents[1])
        search_path = os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")]))
        self.process = subprocess.Popen(
            [sys.executable, "-m", module],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.errors,
            close_fds=True,
            env={**os.environ, "PYTHONPATH": search_path},
        )
        assert self.process.stdin is not None and self.process.stdout is not None
        self.stdin, self.stdout = self.process.stdin, self.process.stdout

    def ended(self) -> tuple[int, str]:
        """Waits for the worker to end: its exit code and what it wrote to its error output."""
        code = self.process.wait()
        self.errors.seek(0)
        return code, self.errors.read().decode("utf-8", "replace").strip()

    def kill(self) -> None:
        self.process.kill()

    def stop(self, timeout: float) -> None:
        """Waits ``timeout`` seconds for the worker to end (its input closed), then kills it."""
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.errors.close()
