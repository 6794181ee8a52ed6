"""google-re2's private binding (``re2._re2``), as litmus/labeling/re2_binding.py uses it.

These fail on an upgrade of google-re2 that changes the private names, signatures or return
shapes the adapter relies on, before any verdict silently changes.
"""

from __future__ import annotations

import re2
from re2 import _re2

from litmus.labeling.re2_binding import Pattern, PatternSet


def test_the_private_binding_has_what_the_adapter_calls() -> None:
    assert hasattr(_re2, "Set"), "re2._re2.Set is gone: rewrite litmus/labeling/re2_binding.py"
    assert hasattr(_re2, "RE2"), "re2._re2.RE2 is gone: rewrite litmus/labeling/re2_binding.py"
    anchor = _re2.RE2.Anchor.UNANCHORED
    options = re2.Options()
    options.max_mem = 8 << 20
    raw_set = _re2.Set(anchor, options)
    assert raw_set.Add(b"ab+") == 0
    assert raw_set.Compile() is True
    assert sorted(raw_set.Match(b"xabbb")) == [0]
    regex = _re2.RE2(b"b+", options)
    assert regex.ok()
    assert regex.Match(anchor, b"abbc", 0, 4) == [(1, 3)]
    assert regex.Match(anchor, b"xyz", 0, 3) == [(-1, -1)]


def test_pattern_set_reports_every_matching_pattern() -> None:
    patterns = PatternSet(8 << 20)
    assert [patterns.add(p) for p in (r"\bcan't\b", "help", r"\d+")] == [0, 1, 2]
    assert patterns.add("(") == -1  # rejected, not numbered
    assert patterns.compile()
    assert sorted(patterns.match(b"i can't help with 42 things")) == [0, 1, 2]
    assert sorted(patterns.match(b"i can help")) == [1]
    assert patterns.match(b"") == []


def test_pattern_gives_the_leftmost_first_span_in_bytes() -> None:
    pattern = Pattern(r"i (?:can't|cannot) \w+", 8 << 20)
    assert pattern.span(b"sorry, i cannot help; i can't do it") == (7, 20)
    assert pattern.span(b"sure, here it is") is None
    # offsets are bytes: a two-byte character before the match moves it by two
    assert pattern.span("é i can't go".encode()) == (3, 13)
    try:
        Pattern("(", 8 << 20)
    except ValueError as error:
        assert "RE2 rejected" in str(error)
    else:
        raise AssertionError("an invalid pattern must be refused")
