"""Errors that reach people: each names the file, and the line or field, that caused it."""

from __future__ import annotations


class LitmusError(Exception):
    """A user-facing failure; the CLI prints its message on one line and exits non-zero."""


class SuiteError(LitmusError):
    def __init__(self, source: str, field: str, reason: str) -> None:
        self.source, self.field, self.reason = source, field, reason
        super().__init__(f"{source}: {field}: {reason}")
