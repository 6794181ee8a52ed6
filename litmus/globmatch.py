"""fnmatch glob patterns, and their translation to RE2 for the vectorized labeler.

SPEC §3: an argument pattern matches with ``fnmatch`` semantics, case-sensitive. The
reference labeler calls :func:`glob_matches` (``fnmatch.fnmatchcase``); the SQL labeler runs
``regexp_full_match(value, translate_glob(pattern))`` in DuckDB (RE2). Python's own
``fnmatch.translate`` emits look-aheads and back-references that RE2 lacks, so this module
re-implements the translation with the same parsing rules, emitting every literal and set
member as a ``\\x{...}`` escape so no character can change meaning inside RE2.
"""

from __future__ import annotations

import fnmatch
import json
import re._constants as _c
import re._parser as _sre_parser
from typing import Any

_NOTHING = r"[^\x{0}-\x{10FFFF}]"


def glob_matches(value: str, pattern: str) -> bool:
    return fnmatch.fnmatchcase(value, pattern)


def match_text(value: Any) -> str:
    """The text an argument pattern is matched against: strings as-is, else compact JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _escape(char: str) -> str:
    return r"\x{%x}" % ord(char)


def _translate_set(bracket_text: str) -> str:
    """Translate one ``[...]`` exactly as fnmatch reads it.

    fnmatch's range rules (leading ``-`` literal, empty ranges such as ``z-a`` dropped, ``!``
    negation) are subtle, so rather than re-deriving them we let fnmatch translate the set and
    read Python's own parse of the result, then emit each member as an RE2 escape.
    """
    python_regex = fnmatch.translate(bracket_text)
    parsed = list(_sre_parser.parse(python_regex))
    # translate() wraps the set as (?s:SET)\Z; the set is the subpattern's only item.
    (_op, (_group, _add, _del, inner)), _end_anchor = parsed
    ((kind, value),) = list(inner)
    if kind is _c.LITERAL:
        return _escape(chr(value))
    if kind is _c.NOT_LITERAL:
        return f"[^{_escape(chr(value))}]"
    if kind is _c.ANY:
        return "(?s:.)"
    if kind is _c.ASSERT_NOT:  # fnmatch's "(?!)": an empty set never matches
        return _NOTHING
    if kind is not _c.IN:
        raise ValueError(f"unexpected set translation {python_regex!r}")
    negated = False
    body: list[str] = []
    for member_kind, member in value:
        if member_kind is _c.NEGATE:
            negated = True
        elif member_kind is _c.LITERAL:
            body.append(_escape(chr(member)))
        elif member_kind is _c.RANGE:
            low, high = member
            body.append(f"{_escape(chr(low))}-{_escape(chr(high))}")
        else:
            raise ValueError(f"unexpected set member in {python_regex!r}")
    return f"[{'^' if negated else ''}{''.join(body)}]"


def translate_glob(pattern: str) -> str:
    """An RE2 pattern (for a *full* match) equivalent to ``fnmatch.fnmatchcase(_, pattern)``."""
    out: list[str] = []
    i = 0
    n = len(pattern)
    while i < n:
        char = pattern[i]
        i += 1
        if char == "*":
            if not out or out[-1] != "(?s:.*)":
                out.append("(?s:.*)")
        elif char == "?":
            out.append("(?s:.)")
        elif char == "[":
            j = i
            if j < n and pattern[j] == "!":
                j += 1
            if j < n and pattern[j] == "]":
                j += 1
            while j < n and pattern[j] != "]":
                j += 1
            if j >= n:
                out.append(_escape("["))  # an unclosed bracket is a literal, as in fnmatch
                continue
            out.append(_translate_set(pattern[i - 1 : j + 1]))
            i = j + 1
        else:
            out.append(_escape(char))
    return "".join(out)
