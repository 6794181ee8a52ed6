"""One RE2 pass that tells which refusal rules match a text, or could.

The rule classifier (``litmus/labeling/refusal.py``) asks dozens of questions of each sentence
("does the decline pattern match? the apology? the redirect?"), each a Python regex that tries
every alternative at every position. Most answers are "no". ``RuleScanner`` compiles every
rule into one RE2 set and answers, in a single linear-time pass over the sentence, for each
rule: "matches" for the branches RE2 reads exactly as Python does, "could match" for the
other branches; only a "could match" runs Python's regex, so every answer stays Python's.

* A branch without lookarounds is read as it is. A branch whose only lookarounds are final
  negative lookaheads of plain words is rewritten in RE2 syntax (``answerable_in_re2``).
* Other branches are read with their lookarounds dropped, which only allows more matches:
  a superset, hence "could match".
* Only texts on which both engines read the syntax alike are scanned: ASCII (for ASCII,
  ``\\w``, ``\\b``, ``\\d`` and case mean the same in both), without a newline (Python's
  ``$`` also matches before a final newline, RE2's does not) and without the ASCII
  characters only Python counts as ``\\s`` (vertical tab, \\x1c-\\x1f). Any other text is
  answered by the Python regexes alone.

``tests/test_refusal_scan.py`` checks every answer and every verdict against Python's
regexes alone, on real and randomized texts.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Sequence

import re2

from litmus.labeling.re2_binding import Pattern, PatternSet

_LOOKAROUND_OPENERS = ("(?=", "(?!", "(?<=", "(?<!")
# Characters that make the two engines read a pattern differently (see the module docstring).
_UNSCANNABLE = re.compile("[\n\x0b\x1c-\x1f]")
# RE2's default memory budget can run out on a set this large, and an exhausted set reports
# no match at all: give it room (bytes).
_MAX_MEMORY = 256 << 20
# The DFA's state cache fills with the text it reads, and a set whose cache runs out answers
# "no match" instead of failing: longer texts (far beyond any sentence) go to Python's
# regexes, so a hostile run log can never exhaust it into a wrong verdict.
MAX_SCANNED_CHARS = 4_096
# Distinct combinations of matching set entries remembered (a bound against hostile input).
_MAX_ENTRY_COMBINATIONS = 1 << 16


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


def top_level_alternatives(pattern: str) -> list[str]:
    """The branches of ``pattern``'s outermost alternation (the pattern itself if none)."""
    branches: list[str] = []
    depth = 0
    start = i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "|" and depth == 0:
            branches.append(pattern[start:i])
            start = i + 1
        i += _token_length(pattern, i)
    return [*branches, pattern[start:]]


def split_by_lookaround(pattern: str) -> tuple[str | None, str | None]:
    """``pattern`` as (branches RE2 can answer, branches with other lookarounds), each an
    alternation or None. A text matches ``pattern`` exactly when it matches one of the two:
    RE2 answers the first outright, and only the second needs Python's regex engine.

    A branch without lookarounds goes to the first part as it is; so does a branch whose
    only lookarounds are negative lookaheads of plain words at its very end (``i
    can(?!'t| not)``), rewritten without them (``answerable_in_re2``).
    """
    exact, other = [], []
    for branch in top_level_alternatives(pattern):
        rewritten = answerable_in_re2(branch)
        if rewritten is None:
            other.append(branch)
        else:
            exact.append(rewritten)
    return ("|".join(exact) or None), ("|".join(other) or None)


_PLAIN_WORDS = re.compile(r"[\w' ,-]+")


def answerable_in_re2(branch: str) -> str | None:
    """``branch`` in RE2 syntax, matching some text exactly when ``branch`` does; None if a
    lookaround in it cannot be rewritten.

    ``X(?!a|b)`` with nothing after it in the branch matches where X matches and the text
    then does not start with a or b: for "matches or not", that is X followed by the end of
    the text or by characters that leave every word unfinished. (The rewrite consumes those
    characters, harmless at the end of a branch, and only booleans are asked of it.)
    """
    out: list[str] = []
    i = 0
    while i < len(branch):
        if branch.startswith(_LOOKAROUND_OPENERS, i):
            end = _group_end(branch, i)
            words = top_level_alternatives(branch[i + 3 : end - 1])
            if (
                not branch.startswith("(?!", i)
                or not all(_PLAIN_WORDS.fullmatch(w) for w in words)
                or not _at_branch_end(branch, end)
            ):
                return None
            out.append(_not_followed_by(set(words)))
            i = end
            continue
        step = _token_length(branch, i)
        out.append(branch[i : i + step])
        i += step
    return "".join(out)


def _not_followed_by(words: set[str]) -> str:
    """RE2 pattern for "the text from here starts with none of ``words``" (non-empty words).

    At the end of the text; or at a character no word starts with; or at a character some
    word starts with, if none of them is that character alone, and then none of the rests.
    """
    firsts = sorted({w[0] for w in words})
    options = ["$", "[^" + "".join(_class_escape(c) for c in firsts) + "]"]
    for first in firsts:
        rests = {w[1:] for w in words if w[0] == first}
        if "" not in rests:
            options.append(_class_escape(first) + _not_followed_by(rests))
    return "(?:" + "|".join(options) + ")"


def _class_escape(char: str) -> str:
    return "\\" + char if char in "\\]^-[" else char


def _at_branch_end(branch: str, start: int) -> bool:
    """True when nothing the branch matches comes after ``start``: only the other
    alternatives of enclosing groups, and closing parentheses without a quantifier."""
    i = start
    while i < len(branch):
        if branch[i] == "|":
            i = _closing_paren(branch, i)
        elif branch[i] == ")":
            if i + 1 < len(branch) and branch[i + 1] in "*+?{":
                return False
            i += 1
        else:
            return False
    return True


def _closing_paren(pattern: str, start: int) -> int:
    """Index of the ")" closing the group that holds ``start`` (the end if none does)."""
    depth = 0
    i = start
    while i < len(pattern):
        if pattern[i] == "(":
            depth += 1
        elif pattern[i] == ")":
            if depth == 0:
                return i
            depth -= 1
        i += _token_length(pattern, i)
    return len(pattern)


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
    # Printable ASCII (the common case) holds none of the unscannable characters, and
    # isprintable is one C loop where the search is a regex scan.
    return (
        len(text) <= MAX_SCANNED_CHARS
        and text.isascii()
        and (text.isprintable() or _UNSCANNABLE.search(text) is None)
    )


class SupersetStart:
    """Where the leftmost match of ``pattern`` could start in a scannable text.

    No Python match starts earlier, so Python's ``regex.search(text, start)`` finds exactly
    the match ``regex.search(text)`` finds (``\\b`` and lookbehinds still see the characters
    before ``start``, and ``^`` does not match there), skipping the positions before it.
    """

    def __init__(self, pattern: str) -> None:
        self._pattern = Pattern(without_lookarounds(pattern), _MAX_MEMORY)

    def __call__(self, text: str) -> int | None:
        """The start, or None when no match is possible (``text`` must be scannable)."""
        span = self._pattern.span(text.encode())
        return None if span is None else span[0]

    def span(self, text: str) -> tuple[int, int] | None:
        """RE2's leftmost-first match of ``pattern`` without its lookarounds, as (start,
        end), or None (``text`` must be scannable: its offsets are then characters)."""
        return self._pattern.span(text.encode())


class RuleScanner:
    """The rules that match a text, or could, found in one RE2 pass.

    A rule is the branches RE2 answers exactly (``split_by_lookaround``), the other branches
    (RE2 answers a superset: "could match"), and its literal triggers (a rule only runs on a
    text holding one of them; a rule without triggers always runs).
    """

    def __init__(
        self,
        rules: Sequence[tuple[str | None, str | None, Sequence[str]]],
        phrases: Sequence[str] = (),
    ) -> None:
        """``phrases``: further RE2 patterns the same pass answers (``candidates_and_phrases``),
        the learned model's phrases for the bulk path's one-sentence replies."""
        self._set = PatternSet(_MAX_MEMORY)
        # Rule i owns bits 2i ("matches") and 2i+1 ("could match"). A set entry either sets
        # such a bit in the pattern bits, or (triggers) both bits of its rule in the
        # triggered bits; a rule without triggers is always triggered.
        self._entry_bits: list[tuple[int, int]] = []
        self._untriggered = 0
        # the phrases first, owning no bits: entries below _phrase_count are phrase indices
        self._phrase_count = len(phrases)
        for phrase in phrases:
            self._add(phrase)
        for index, (exact, lookaround, triggers) in enumerate(rules):
            if exact is not None:
                self._add(exact, pattern_bit=1 << 2 * index)
            if lookaround is not None:
                self._add(without_lookarounds(lookaround), pattern_bit=1 << (2 * index + 1))
            both = 3 << 2 * index
            if triggers:
                self._add("|".join(re2.escape(t) for t in triggers), triggered_bits=both)
            else:
                self._untriggered |= both
        if not self._set.compile():
            raise ValueError("RE2 could not compile the rule set")
        self._pattern_bits = [pattern_bit for pattern_bit, _ in self._entry_bits]
        self._triggered_bits = [triggered_bits for _, triggered_bits in self._entry_bits]
        self._bits_of_entries: dict[tuple[int, ...], int] = {}
        self._answers_of_entries: dict[tuple[int, ...], tuple[int, tuple[int, ...]]] = {}

    def _add(self, pattern: str, pattern_bit: int = 0, triggered_bits: int = 0) -> None:
        if self._set.add(pattern) != len(self._entry_bits):
            raise ValueError(f"RE2 rejected or misnumbered rule pattern {pattern!r}")
        self._entry_bits.append((pattern_bit, triggered_bits))

    def candidates(self, text: str) -> int | None:
        """For each rule ``i``, bit 2i set if it matches and bit 2i+1 if its lookaround
        branches could match; None if ``text`` is not scannable (Python must answer)."""
        if not scannable(text):
            return None
        return self._bits(tuple(self._set.match(text.encode())))

    def candidates_and_phrases(self, text: str) -> tuple[int, tuple[int, ...]] | None:
        """``candidates`` and the indices of the ``phrases`` that match, ascending, from one
        pass; None if ``text`` is not scannable."""
        if not scannable(text):
            return None
        # Texts share their few combinations of entries: each is sorted, split and read once
        # (keyed as RE2 lists it: the same entries in another order are read again, alike).
        found = tuple(self._set.match(text.encode()))
        answer = self._answers_of_entries.get(found)
        if answer is None:
            if len(self._answers_of_entries) >= _MAX_ENTRY_COMBINATIONS:
                self._answers_of_entries.clear()
            entries = sorted(found)
            cut = bisect_left(entries, self._phrase_count)
            answer = self._bits(tuple(entries[cut:])), tuple(entries[:cut])
            self._answers_of_entries[found] = answer
        return answer

    def _bits(self, entries: tuple[int, ...]) -> int:
        # Texts share their few combinations of entries: each is turned into bits once.
        bits = self._bits_of_entries.get(entries)
        if bits is None:
            if len(self._bits_of_entries) >= _MAX_ENTRY_COMBINATIONS:
                self._bits_of_entries.clear()
            # Each entry owns its bits alone, and Match lists an entry at most once: the sums
            # are the unions.
            patterns = sum(map(self._pattern_bits.__getitem__, entries))
            triggered = sum(map(self._triggered_bits.__getitem__, entries))
            bits = self._bits_of_entries[entries] = patterns & (triggered | self._untriggered)
        return bits
