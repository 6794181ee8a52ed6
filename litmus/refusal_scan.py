"""One RE2 pass that tells which refusal rules could match a text.

The rule classifier (``litmus/refusal.py``) asks dozens of questions of each sentence ("does
the decline pattern match? the apology? the redirect?"), each a Python regex that tries
every alternative at every position. Most answers are "no". ``RuleScanner`` compiles every
rule into one RE2 set and finds, in a single linear-time pass, the rules whose pattern could
match; only those run their Python regex, which keeps the verdict exactly Python's.

"Could match" must never miss a Python match, so two things make the RE2 side a superset:

* Lookaround assertions, which RE2 does not support, are dropped from the RE2 pattern
  (dropping an assertion only allows more matches).
* Only texts on which both engines read the remaining syntax alike are scanned: ASCII (for
  ASCII, ``\\w``, ``\\b``, ``\\d`` and case mean the same in both), without a newline
  (Python's ``$`` also matches before a final newline, RE2's does not) and without the
  ASCII characters only Python counts as ``\\s`` (vertical tab, \\x1c-\\x1f). Any other text
  is answered by the Python regexes alone.

``tests/test_refusal_scan.py`` checks that verdicts with and without the scanner are
identical on real and randomized texts.
"""

from __future__ import annotations

from collections.abc import Sequence

import re2

_LOOKAROUND_OPENERS = ("(?=", "(?!", "(?<=", "(?<!")
# Characters that make the two engines read a pattern differently (see the module docstring).
_UNSCANNABLE = frozenset("\n\x0b\x1c\x1d\x1e\x1f")
# RE2's default memory budget can run out on a set this large, and an exhausted set reports
# no match at all: give it room (bytes).
_MAX_MEMORY = 256 << 20


def without_lookarounds(pattern: str) -> str:
    """``pattern`` with every lookahead and lookbehind group removed."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith(_LOOKAROUND_OPENERS, i):
            i = _group_end(pattern, i)
            continue
        step = _token_length(pattern, i)
        out.append(pattern[i : i + step])
        i += step
    return "".join(out)


def _token_length(pattern: str, start: int) -> int:
    """Length of the token at ``start``: an escape, a character class or one character."""
    if pattern[start] == "\\":
        return 2
    if pattern[start] != "[":
        return 1
    i = start + 1
    if i < len(pattern) and pattern[i] == "^":
        i += 1
    if i < len(pattern) and pattern[i] == "]":  # a leading "]" is a literal
        i += 1
    while pattern[i] != "]":
        i += 2 if pattern[i] == "\\" else 1
    return i + 1 - start


def _group_end(pattern: str, start: int) -> int:
    """Index just past the group that opens at ``start``."""
    depth = 0
    i = start
    while True:
        if pattern[i] == "(":
            depth += 1
        elif pattern[i] == ")":
            depth -= 1
            if depth == 0:
                return i + 1
        i += _token_length(pattern, i)


def scannable(text: str) -> bool:
    """True when RE2 reads the rules on ``text`` as Python does (up to dropped lookarounds)."""
    return text.isascii() and _UNSCANNABLE.isdisjoint(text)


class RuleScanner:
    """The rules whose pattern could match a text, found in one RE2 pass.

    A rule is a pattern and its literal triggers (a rule only runs on a text holding one of
    them); a rule without triggers always runs.
    """

    def __init__(self, rules: Sequence[tuple[str, Sequence[str]]]) -> None:
        options = re2.Options()
        options.max_mem = _MAX_MEMORY
        self._set = re2.Set.SearchSet(options)
        # per set entry: the bit of its rule, and whether the entry is the rule's triggers
        self._entry_bit: list[int] = []
        self._entry_is_trigger: list[bool] = []
        self._untriggered = 0  # bits of the rules without triggers
        for index, (pattern, triggers) in enumerate(rules):
            self._add(without_lookarounds(pattern), 1 << index, is_trigger=False)
            if triggers:
                self._add("|".join(re2.escape(t) for t in triggers), 1 << index, is_trigger=True)
            else:
                self._untriggered |= 1 << index
        self._set.Compile()

    def _add(self, pattern: str, bit: int, *, is_trigger: bool) -> None:
        if self._set.Add(pattern) != len(self._entry_bit):
            raise ValueError(f"RE2 numbered set entry out of order: {pattern!r}")
        self._entry_bit.append(bit)
        self._entry_is_trigger.append(is_trigger)

    def candidates(self, text: str) -> int | None:
        """Bit ``i`` set for each rule ``i`` that could match; None if ``text`` is not
        scannable (every rule must then be asked)."""
        if not scannable(text):
            return None
        pattern_bits = trigger_bits = 0
        for entry in self._set.Match(text) or ():
            if self._entry_is_trigger[entry]:
                trigger_bits |= self._entry_bit[entry]
            else:
                pattern_bits |= self._entry_bit[entry]
        return pattern_bits & (trigger_bits | self._untriggered)
