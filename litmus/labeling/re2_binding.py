"""The one place that touches google-re2's private binding module ``re2._re2``.

The public ``re2`` wrapper has no pattern set, and its per-call Python layer costs as much as
the scan itself on the short texts the refusal judgment reads (docs/refusal.md, speed). The
binding's ``RE2`` and ``Set`` are used directly, only through this module, and
``tests/test_re2_binding.py`` fails loudly when an upgrade of google-re2 changes them.

Offsets and matches are in bytes of the UTF-8 text; callers pass ASCII (or accept bytes).
"""

from __future__ import annotations

from collections.abc import Callable

import re2
from re2 import _re2

_UNANCHORED = _re2.RE2.Anchor.UNANCHORED


def _options(max_mem: int) -> re2.Options:
    options = re2.Options()
    options.max_mem = max_mem
    return options


class PatternSet:
    """An unanchored RE2 set: which of its patterns match a text, in one pass."""

    def __init__(self, max_mem: int) -> None:
        self._set = _re2.Set(_UNANCHORED, _options(max_mem))
        # ``match(data: bytes) -> list[int]``: the indices of the patterns that match; the
        # binding's bound method itself, so a call costs no Python frame of ours
        self.match: Callable[[bytes], list[int]] = self._set.Match

    def add(self, pattern: str) -> int:
        """Add ``pattern``; its index, or -1 when RE2 rejects it."""
        return int(self._set.Add(pattern.encode()))

    def compile(self) -> bool:
        """Freeze the set (after the last ``add``); False when RE2 cannot build it."""
        return bool(self._set.Compile())


class Pattern:
    """One compiled RE2 pattern: the span of its leftmost-first match."""

    def __init__(self, pattern: str, max_mem: int) -> None:
        self._regex = _re2.RE2(pattern.encode(), _options(max_mem))
        if not self._regex.ok():
            raise ValueError(f"RE2 rejected pattern {pattern!r}")

    def span(self, data: bytes) -> tuple[int, int] | None:
        """(start, end) of the leftmost match in ``data``, or None."""
        span: tuple[int, int] = self._regex.Match(_UNANCHORED, data, 0, len(data))[0]
        return None if span[0] < 0 else span
