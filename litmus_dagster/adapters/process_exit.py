"""The adapter for the interpreter's private exit-handler runner (``atexit._run_exitfuncs``).

``litmus`` ends a finished command without tearing down the interpreter's object graph
(Dagster, dbt, GE and their imports: up to three CPU-seconds per command, for nothing),
but still runs the exit handlers (logging's shutdown, the libraries' own, LITMUS's closing
of open Dagster instances). The standard library has no public call that runs them and then
ends the process; tests/test_adapters.py fails if ``atexit`` loses this one.
"""

from __future__ import annotations

import atexit
import os
import sys
from typing import NoReturn


def exit_without_teardown(code: int) -> NoReturn:
    """Run the exit handlers, flush the standard streams and end the process with ``code``."""
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
