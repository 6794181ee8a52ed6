"""fnmatch glob patterns, and their translations for the vectorized labeler.

SPEC §3: an argument pattern matches with ``fnmatch`` semantics, case-sensitive (the labeler
oracle, tests/labeler_reference.py, calls ``fnmatch.fnmatchcase``). The SQL labeler needs
the same answers from DuckDB, which only compiles a regular expression once when the pattern
is a constant; the patterns here come from a column, so a regex would be recompiled per row.
Each pattern is therefore parsed once, exactly as fnmatch parses it, and emitted as:

- a DuckDB ``GLOB`` pattern (no compilation, fast) whenever every set in it is plain ASCII
  letters and digits, with every other special character escaped; otherwise
- an RE2 pattern for ``regexp_full_match``, every literal written as a ``\\x{...}`` escape.

``tests/test_labeler_equivalence.py`` checks both emitters against fnmatch on random input.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from typing import Any

from litmus.adapters import (
    REGEX_ANY,
    REGEX_ASSERT_NOT,
    REGEX_IN,
    REGEX_LITERAL,
    REGEX_NEGATE,
    REGEX_NOT_LITERAL,
    REGEX_RANGE,
    parse_regex,
)
from litmus.canonical import canonical_json, compact_json

_NOTHING = r"[^\x{0}-\x{10FFFF}]"


def match_text(value: Any) -> str:
    """The text an argument pattern is matched against: strings as-is, else compact JSON."""
    if isinstance(value, str):
        return value
    return compact_json(value)


def _integral_as_int(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {key: _integral_as_int(child) for key, child in value.items()}
    if isinstance(value, list):
        return [_integral_as_int(child) for child in value]
    return value


def equality_json(value: Any) -> str:
    """One text per JSON value as a state matcher's ``equals`` compares them: the canonical
    text with an integral number written as an integer (``1.0`` equals ``1``, as in JSON), and
    ``true`` never a number. Two values are equal exactly when their texts are."""
    return canonical_json(_integral_as_int(value))


@dataclass(frozen=True)
class _Star:
    pass


@dataclass(frozen=True)
class _AnyChar:
    pass


@dataclass(frozen=True)
class _Literal:
    text: str  # one character or more, each matched as itself


@dataclass(frozen=True)
class _Set:
    negated: bool
    ranges: tuple[tuple[str, str], ...]  # empty and not negated: matches nothing


_Token = _Star | _AnyChar | _Literal | _Set


def _parse_set(bracket_text: str) -> _Token:
    """One ``[...]`` read exactly as fnmatch reads it.

    fnmatch's range rules (leading ``-`` literal, empty ranges such as ``z-a`` dropped, ``!``
    negation) are subtle, so rather than re-deriving them we let fnmatch translate the set and
    read Python's own parse of the result.
    """
    python_regex = fnmatch.translate(bracket_text)
    (_op, (_group, _add, _del, inner)), _end_anchor = parse_regex(python_regex)
    ((kind, value),) = list(inner)
    if kind is REGEX_LITERAL:
        return _Literal(chr(value))
    if kind is REGEX_NOT_LITERAL:
        return _Set(True, ((chr(value), chr(value)),))
    if kind is REGEX_ANY:
        return _AnyChar()
    if kind is REGEX_ASSERT_NOT:  # fnmatch's "(?!)": an empty set never matches
        return _Set(False, ())
    if kind is not REGEX_IN:
        raise ValueError(f"unexpected set translation {python_regex!r}")
    negated = False
    ranges: list[tuple[str, str]] = []
    for member_kind, member in value:
        if member_kind is REGEX_NEGATE:
            negated = True
        elif member_kind is REGEX_LITERAL:
            ranges.append((chr(member), chr(member)))
        elif member_kind is REGEX_RANGE:
            ranges.append((chr(member[0]), chr(member[1])))
        else:
            raise ValueError(f"unexpected set member in {python_regex!r}")
    return _Set(negated, tuple(ranges))


def _tokens(pattern: str) -> list[_Token]:
    """Split a pattern the way ``fnmatch.translate`` scans it."""
    out: list[_Token] = []
    i, n = 0, len(pattern)
    while i < n:
        char = pattern[i]
        i += 1
        if char == "*":
            if not out or not isinstance(out[-1], _Star):
                out.append(_Star())
        elif char == "?":
            out.append(_AnyChar())
        elif char == "[":
            j = i
            if j < n and pattern[j] == "!":
                j += 1
            if j < n and pattern[j] == "]":
                j += 1
            while j < n and pattern[j] != "]":
                j += 1
            if j >= n:
                out.append(_Literal("["))  # an unclosed bracket is a literal, as in fnmatch
                continue
            out.append(_parse_set(pattern[i - 1 : j + 1]))
            i = j + 1
        else:
            # a run of plain characters is one token: a suite's patterns are mostly literal
            # text, and a token a character was most of the time of translating them
            run = _LITERAL_RUN.match(pattern, i)
            assert run is not None  # the pattern matches the empty string
            out.append(_Literal(pattern[i - 1 : run.end()]))
            i = run.end()
    return out


_LITERAL_RUN = re.compile(r"[^*?\[]*")


def _escape_re2(char: str) -> str:
    return rf"\x{{{ord(char):x}}}"


def translate_glob(pattern: str) -> str:
    """An RE2 pattern (for a *full* match) equivalent to ``fnmatch.fnmatchcase(_, pattern)``."""
    return _re2_of(_tokens(pattern))


def translate_glob_both(pattern: str) -> tuple[str | None, str]:
    """(``translate_glob_duckdb``, ``translate_glob``) of one pattern, scanned once."""
    tokens = _tokens(pattern)
    return _duckdb_glob_of(tokens), _re2_of(tokens)


def _re2_of(tokens: list[_Token]) -> str:
    parts: list[str] = []
    for token in tokens:
        if isinstance(token, _Star):
            parts.append("(?s:.*)")
        elif isinstance(token, _AnyChar):
            parts.append("(?s:.)")
        elif isinstance(token, _Literal):
            parts.extend(map(_escape_re2, token.text))
        elif not token.ranges:
            parts.append("(?s:.)" if token.negated else _NOTHING)
        else:
            body = "".join(
                _escape_re2(lo) if lo == hi else f"{_escape_re2(lo)}-{_escape_re2(hi)}"
                for lo, hi in token.ranges
            )
            parts.append(f"[{'^' if token.negated else ''}{body}]")
    return "".join(parts)


_GLOB_SPECIAL = frozenset("*?[]\\")


def _plain(char: str) -> bool:
    return char.isascii() and char.isalnum()


def translate_glob_duckdb(pattern: str) -> str | None:
    """A DuckDB ``GLOB`` pattern with fnmatch's meaning, or None when one can't be made safely."""
    return _duckdb_glob_of(_tokens(pattern))


def _duckdb_glob_of(tokens: list[_Token]) -> str | None:
    # DuckDB's GLOB reads ``?`` and a negated class as one byte (1.5), not one character: a
    # pattern with either is matched by its regex, which counts characters like fnmatch.
    parts: list[str] = []
    for token in tokens:
        if isinstance(token, _Star):
            parts.append("*")
        elif isinstance(token, _AnyChar):
            return None
        elif isinstance(token, _Literal):
            parts.extend(f"[{char}]" if char in _GLOB_SPECIAL else char for char in token.text)
        elif (
            not token.negated
            and token.ranges
            and all(_plain(lo) and _plain(hi) for lo, hi in token.ranges)
        ):
            body = "".join(lo if lo == hi else f"{lo}-{hi}" for lo, hi in token.ranges)
            parts.append(f"[{body}]")
        else:
            return None
    return "".join(parts)
