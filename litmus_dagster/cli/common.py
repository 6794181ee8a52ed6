"""What every command family shares: the one terminal line writer and where the development
data lives."""

from __future__ import annotations

import sys
from pathlib import Path

from litmus import SHARED_DATA_DIR
from litmus.neutralize import for_terminal


def say(message: str) -> None:
    # messages name suites, files and configurations from untrusted input: never a raw escape
    print(for_terminal(message, keep_newlines=True), file=sys.stderr, flush=True)


def default_shared_data(name: str) -> str:
    """``../shared/data/<name>`` beside the checkout, where the development data lives."""
    for candidate in (SHARED_DATA_DIR / name, Path("../shared/data") / name):
        if candidate.is_dir():
            return str(candidate)
    return f"../shared/data/{name}"
