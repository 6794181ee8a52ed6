"""Errors that reach people: each names the file, and the line or field, that caused it."""

from __future__ import annotations

from pathlib import Path


class LitmusError(Exception):
    """A user-facing failure; the CLI prints its message on one line and exits non-zero."""


class WarehouseBusyError(RuntimeError):
    """Another process held the warehouse (or the lake's lock) for longer than the allowed
    wait."""


class SuiteError(LitmusError):
    def __init__(self, source: str, field: str, reason: str) -> None:
        self.source, self.field, self.reason = source, field, reason
        super().__init__(f"{source}: {field}: {reason}")


def require_file(name: str | Path, kind: str) -> Path:
    """``name`` as an existing regular file, else one line naming it and what is wrong (a
    directory given for a file, a missing file)."""
    path = Path(name)
    if path.is_dir():
        raise LitmusError(f"{path}: is a directory; expected {kind}")
    if not path.exists():
        raise LitmusError(f"{path}: no such file")
    if not path.is_file():
        raise LitmusError(f"{path}: not a regular file; expected {kind}")
    return path
