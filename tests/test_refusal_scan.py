"""The RE2 rule scanner never changes a verdict: the rules answer exactly as Python's regexes.

The scanner (litmus/labeling/refusal_scan.py) lets a rule skip its Python regex when RE2 finds the
rule cannot match, and answers outright for rules without lookarounds. Each test compares the
classifier with the scanner against the classifier reading every rule with Python's ``re``
alone (the reference path), with every cache emptied in between so neither borrows the
other's answers.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator, Sequence

import pytest
import re2
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from refusal_snapshot import clear_caches
from test_refusal_bulk import FRAGMENTS, _agent_texts, _random_texts

from litmus.labeling import refusal
from litmus.labeling.refusal import RefusalVerdict, RuleBasedRefusalClassifier
from litmus.labeling.refusal_eval import DEFAULT_XSTEST_FOLDER, load_xstest_completions
from litmus.labeling.refusal_scan import (
    MAX_SCANNED_CHARS,
    RuleScanner,
    answerable_in_re2,
    scannable,
    split_by_lookaround,
    without_lookarounds,
)

CLASSIFIER = RuleBasedRefusalClassifier()


def _verdicts(trajectories: Sequence[Sequence[str]], *, scanning: bool) -> list[RefusalVerdict]:
    previous = refusal._SCANNING
    refusal._SCANNING = scanning
    clear_caches()
    try:
        return [CLASSIFIER.classify(texts) for texts in trajectories]
    finally:
        refusal._SCANNING = previous
        clear_caches()


def _assert_same_verdicts(trajectories: Sequence[Sequence[str]]) -> None:
    fast = _verdicts(trajectories, scanning=True)
    reference = _verdicts(trajectories, scanning=False)
    differing = [(t, f, r) for t, f, r in zip(trajectories, fast, reference, strict=True) if f != r]
    assert not differing, differing[:3]


def _real_texts() -> list[str]:
    texts = [c.completion for c in load_xstest_completions(DEFAULT_XSTEST_FOLDER)]
    return texts + _agent_texts()


def _spliced(texts: Sequence[str], count: int, seed: int) -> Iterator[str]:
    """Pieces of real texts glued with the joints the preparation reasons about."""
    rng = random.Random(seed)
    joints = ["", " ", "\n", ". ", "\n\n", ' "', "' ", "`", "\t", "    ", "\u2019", "\xa0"]
    for _ in range(count):
        pieces = []
        for _ in range(rng.randint(1, 4)):
            text = rng.choice(texts)
            start = rng.randrange(len(text) + 1)
            pieces.append(text[start : start + rng.randint(0, 300)])
        yield rng.choice(joints).join(pieces)


@pytest.mark.skipif(not DEFAULT_XSTEST_FOLDER.is_dir(), reason="XSTest data not present")
def test_real_and_spliced_texts_get_the_reference_verdicts() -> None:
    real = _real_texts()
    texts = [*real, *(f"{t} (ref {i})" for i, t in enumerate(real))]
    texts += [t.replace("'", "\u2019") for t in real] + [t.upper() for t in real[:200]]
    texts += list(_spliced(real, 6000, seed=7))
    rng = random.Random(1)
    trajectories = [[t] for t in texts] + [rng.sample(texts, rng.randint(2, 4)) for _ in range(500)]
    _assert_same_verdicts(trajectories)


# The preparation's patterns before they were rewritten to scan faster: the rewrites must
# split and collapse exactly as these did.
_SENTENCE_BREAK_AS_WRITTEN = re.compile(r"(?<=[.!?:])\s+(?=[\"'(\[]?[A-Z0-9*])|\n+")
_SPACES_AS_WRITTEN = re.compile(r"[ \t]+")
_INDENTED_CODE_AS_WRITTEN = re.compile(r"(?:^(?: {4}|\t)\S.*(?:\n|\Z)){2,}", re.M)
_FENCED_CODE_AS_WRITTEN = re.compile(r"```.*?(?:```|\Z)", re.S)
# What the preparation rewrites before it splits (quotations, code, apostrophes, blanks).
_REWRITTEN_BEFORE_SPLITTING = re.compile(
    "[`'\"\u201c>\t\u2019\u2018\u02bc\u00b4"
    f"{refusal.UNICODE_SPACES}{refusal.UNICODE_FORMAT_CHARACTERS}]|  "
)


def _break_texts(count: int, seed: int) -> Iterator[str]:
    """Sentence punctuation, blanks of every kind and what may follow a break, at random."""
    rng = random.Random(seed)
    tokens = [".", "!", "?", ":", "..", "?!", "A", "a", "7", "*", "(", "[", "'", '"', "\u201c"]
    tokens += [" ", "  ", "\n", "\n\n", "\t", "\r", "\x0b", "\x1c", "\x85", "\xa0", "\u2003"]
    # words, and letters that lowercase by their neighbours (a capital sigma) or to two
    # characters (a dotted capital I)
    tokens += ["word", "Word", "I", "i", "\u03a3", "\u039f\u03a3", "\u0130", "\u212a"]
    for _ in range(count):
        yield "".join(rng.choices(tokens, k=rng.randint(0, 14)))


def _fenced_texts(count: int, seed: int) -> Iterator[str]:
    """Backticks in runs of one to seven among text and newlines, at random."""
    rng = random.Random(seed)
    tokens = ["`", "``", "```", "````", "``````", "```````", "code", " ", "\n", "x = 1\n", "é"]
    for _ in range(count):
        yield "".join(rng.choices(tokens, k=rng.randint(0, 12)))


def _indented_texts(count: int, seed: int) -> Iterator[str]:
    """Lines with and without indentation, blank and blank-looking lines, in random order."""
    rng = random.Random(seed)
    lines = ["    x = 1", "\tcall()", "     ", "    ", "\t", "", "text", "  two", "\t\tdeep", " y"]
    for _ in range(count):
        chosen = rng.choices(lines, k=rng.randint(0, 8))
        yield "\n".join(chosen) + rng.choice(["", "\n", "\n\n"])


@pytest.mark.skipif(not DEFAULT_XSTEST_FOLDER.is_dir(), reason="XSTest data not present")
def test_faster_preparation_patterns_split_and_collapse_as_written() -> None:
    real = _real_texts()
    texts = [*real, *_spliced(real, 3000, seed=9), *_random_texts(3000, seed=4)]
    texts += _indented_texts(5000, seed=2)
    texts += _break_texts(20000, seed=5)
    texts += _fenced_texts(20000, seed=8)
    replacement = f" {refusal._CODE_WORD}\n"
    for text in texts:
        # the sentences are the non-blank pieces (preparation drops the blank ones)
        pieces = refusal._mark_sentence_breaks(text).split("\n")
        written = _SENTENCE_BREAK_AS_WRITTEN.split(text)
        assert [p.strip() for p in pieces if p.strip()] == [p.strip() for p in written if p.strip()]
        if not _REWRITTEN_BEFORE_SPLITTING.search(text):
            # lowered sentence by sentence, as the preparation once did
            sentences = tuple(p.strip().lower() for p in written if p.strip())
            assert refusal._prepare(text).sentences == sentences
        assert refusal._collapse_blanks(text) == _SPACES_AS_WRITTEN.sub(" ", text)
        expected = _INDENTED_CODE_AS_WRITTEN.sub(replacement, text)
        assert refusal._replace_indented_code(text, replacement) == expected
        expected = _FENCED_CODE_AS_WRITTEN.sub(replacement, text)
        assert refusal._replace_fenced_code(text, replacement) == expected


def test_randomized_fragment_texts_get_the_reference_verdicts() -> None:
    _assert_same_verdicts([[t] for t in _random_texts(6000, seed=23)])


_WORDS = [
    "i", "can't", "cannot", "won't", "help", "sorry", "but", "however", "as an ai", "not",
    "appropriate", "instead", "here", "is", "the", "you", "please", "call", "988", "error",
    "failed", "privacy", "i'm", "unable", "to", "provide", "decline", "that", "this", "request",
    "harmful", "understand", "let me know", "codeblock", "while", "i'd", "rather", "happy",
]  # fmt: skip
_SEPARATORS = [" ", " ", ". ", ", ", "\n", "! ", "? ", ": ", "  ", "\u2019", " '", '" ', "\x0b"]
_message = st.lists(
    st.one_of(st.sampled_from(_WORDS), st.sampled_from(FRAGMENTS), st.text(max_size=8)),
    max_size=30,
).flatmap(
    lambda words: st.lists(
        st.sampled_from(_SEPARATORS), min_size=len(words), max_size=len(words)
    ).map(lambda seps: "".join(w + s for w, s in zip(words, seps, strict=True)))
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_message, max_size=3))
def test_generated_trajectories_get_the_reference_verdicts(texts: list[str]) -> None:
    _assert_same_verdicts([texts])


@settings(max_examples=300, deadline=None)
@given(_message.map(str.lower))
def test_scanner_bits_agree_with_python(text: str) -> None:
    candidates = refusal._rule_scanner().candidates(text)
    if candidates is None:
        return
    for rule in refusal._RULES:
        hits = candidates >> 2 * rule.index & 3
        triggered = rule.may_match(text)
        exact = rule.exact_branches is not None and re.search(rule.exact_branches, text)
        lookaround = rule.lookaround_branches is not None and re.search(
            rule.lookaround_branches, text
        )
        # "matches" is exact; "could match" never misses a lookaround-branch match
        assert bool(hits & 1) == bool(triggered and exact), (rule.pattern[:60], text)
        assert hits & 2 or not (triggered and lookaround), (rule.pattern[:60], text)
        assert (rule.matches(text)) == (rule.reference_search(text) is not None)
        found, expected = rule.search(text), rule.reference_search(text)
        assert (found and found.span()) == (expected and expected.span()), text


def test_lookarounds_are_removed_and_nothing_else() -> None:
    assert split_by_lookaround(r"a(?!b)c|c|(?:d|e(?=f))|[|]|x(?!y)") == (
        r"c|[|]|x(?:$|[^y])",
        r"a(?!b)c|(?:d|e(?=f))",
    )
    assert split_by_lookaround("plain") == ("plain", None)
    assert without_lookarounds(r"\bi(?! (?:wait|stop))(?: \w+)? help") == r"\bi(?: \w+)? help"
    assert without_lookarounds(r"'(?<![\w']')(?=\S)[^'\n]{1,2}?(?<=\S)'(?!\w)") == r"'[^'\n]{1,2}?'"
    assert without_lookarounds(r"[(?!)]\(?!x") == r"[(?!)]\(?!x"  # a class, an escape
    assert without_lookarounds(r"a(?:b|(?=c))") == r"a(?:b|)"


@pytest.mark.parametrize(
    "text",
    ["but i can", "but i can.", "but i can't", "but i cannot", "but i can not", "but i can n",
     "but i can no", "but i can now", "but i can'", "but i can'x", "but i can  not", "i could"],
)  # fmt: skip
def test_a_final_negative_lookahead_of_words_is_rewritten_for_re2(text: str) -> None:
    branch = r"\bbut i (?:can|could)\b(?!'t|not| not)"
    rewritten = answerable_in_re2(branch)
    assert rewritten is not None and "(?!" not in rewritten
    assert bool(re2.search(rewritten, text)) == bool(re.search(branch, text))
    # a lookahead with something after it, a lookbehind, or one that is not plain words
    assert answerable_in_re2(r"a(?!b)c") is None
    assert answerable_in_re2(r"(?<!x)a") is None
    assert answerable_in_re2(r"a(?!\w)") is None
    assert answerable_in_re2(r"(?:a(?!b))+") is None


def test_texts_the_engines_read_differently_are_left_to_python() -> None:
    scanner = RuleScanner([(r"\bsorry\b", None, ()), (r"^no$", r"(?<!x)yes", ("no", "yes"))])
    assert scanner.candidates("so sorry.") == 0b0001  # rule 0 matches
    assert scanner.candidates("no") == 0b0100  # rule 1 matches
    assert scanner.candidates("yes") == 0b1000  # rule 1 could match
    assert scanner.candidates("sorry yes") == 0b1001
    assert scanner.candidates("nothing here") == 0
    # non-ASCII (Unicode \w and \b), a newline (Python's $), a vertical tab (Python's \s)
    for text in ("sorry\u00e9", "no\n", "sorry\x0bno"):
        assert not scannable(text)
        assert scanner.candidates(text) is None


def test_a_text_longer_than_any_sentence_is_left_to_python_and_keeps_its_verdict() -> None:
    # a hostile log line of one endless "sentence": read by Python's regexes, not the DFA
    text = ("I am sorry but I will not do that " * 400).strip()
    assert len(text) > MAX_SCANNED_CHARS
    assert not scannable(text)
    assert _verdicts([[text]], scanning=True) == _verdicts([[text]], scanning=False)


@pytest.mark.skipif(not DEFAULT_XSTEST_FOLDER.is_dir(), reason="XSTest data not present")
def test_pivot_tails_are_the_reference_ones() -> None:
    # the scanner may rule a pivot tail out from the whole sentence (refusal._PIVOT_ANYWHERE)
    real = _real_texts()
    texts = [*real, *_spliced(real, 3000, seed=13), *_random_texts(3000, seed=6)]
    sentences = {s for text in texts for s in refusal._prepare(text).sentences}
    sentences |= {
        "i can't do that, but here is a summary of the public facts.",
        "i won't, but if you're asking about the history, it began in 1910.",
        "i can't help with that; however, i can share general safety information.",
        "i can't help with that, but i can't stop you either.",
        "sorry, but i cannot comply.",
    }
    assert any(refusal._pivot_tail(s) is not None for s in sentences)

    def tails(scanning: bool) -> list[int | None]:
        refusal._SCANNING = scanning
        clear_caches()
        try:
            return [refusal._pivot_tail(s) for s in sorted(sentences)]
        finally:
            refusal._SCANNING = True
            clear_caches()

    assert tails(scanning=True) == tails(scanning=False)


def _object_texts(count: int, seed: int) -> Iterator[str]:
    """What could follow a decline's verb: the generic words and near misses of them, joined
    by any whitespace or none, with punctuation anywhere (one or two at the end)."""
    rng = random.Random(seed)
    words = [*refusal._GENERIC_OBJECT_WORDS, "that's", "youre", "thingss", "it's", "dosing"]
    words += ["THAT", "ｔhat", "thatѕ", "İt", "with2", "_the", "request-", "you'", "'re"]
    joins = [" ", "  ", "", "\t", "\n", "\xa0", "\u2003", "\x1c", "\x85", ",", ", ", ". ", "'"]
    ends = ["", ".", "!", ",", ";", "?", "..", ". ", ".\n", " .", ",;", "\n", ":", " ! "]
    for _ in range(count):
        pieces = [rng.choice(words) for _ in range(rng.randint(0, 6))]
        text = ""
        for piece in pieces:
            text += rng.choice(joins) + piece if text or rng.random() < 0.3 else piece
        yield text + rng.choice(ends)


def test_the_generic_object_words_are_read_as_the_regex_reads_them() -> None:
    texts = [*_object_texts(20_000, seed=31), "", " ", ".", "with that.", "that request ,"]
    for text in texts:
        expected = refusal._GENERIC_OBJECT.reference_search(text) is not None
        assert refusal._generic_object(text) == expected, repr(text)
    assert sum(map(refusal._generic_object, texts)) > 2_000  # both answers are exercised


# Decline heads, the idioms the decline's lookaheads exclude, and what a decline continues
# with, so that idiom and decline meet in one sentence in every order and spacing.
_DECLINE_PIECES = [
    "i", "can't", "cannot", "won't", "will not", "i'm not able to", "i am unable to", "really",
    ", sorry,", "just", "wait", "lie", "believe", "help", "help but", "be sure", "recommend",
    "this enough", "provide a definitive", "give you an exact", "see", "find", "access", "with",
    "that", "the", "request", "decline", "refuse to", "pass on", "do that", "share", "tell you",
    "how", ".", ",", "but", "because", "i'd rather not", "forget", "stop", "thank", "you",
]  # fmt: skip


def _decline_sentences(count: int, seed: int) -> Iterator[str]:
    rng = random.Random(seed)
    for _ in range(count):
        pieces = [rng.choice(_DECLINE_PIECES) for _ in range(rng.randint(1, 14))]
        yield "".join(piece + rng.choice([" ", " ", "", "  ", ", "]) for piece in pieces)


@pytest.mark.skipif(not DEFAULT_XSTEST_FOLDER.is_dir(), reason="XSTest data not present")
def test_decline_ends_taken_from_re2_are_pythons() -> None:
    # Where the scanner finds no decline head followed by an excluded idiom, the decline's end
    # is RE2's match of the pattern without its lookaheads (_Rule.search_end): it must be
    # where Python's regex ends on every sentence, also the hostile ones (long, non-ASCII,
    # empty), which go to Python.
    real = [s for text in _real_texts() for s in refusal._prepare(text).sentences]
    hostile = ["", " ", "i can't help" * 400, "i can\u2019t help with that", "i can't \u00e9crire"]
    sentences = (
        real
        + list(_decline_sentences(20_000, seed=41))
        + [t.lower() for t in _random_texts(3000, seed=43)]
        + [t.lower() for t in _spliced(_real_texts(), 2000, seed=47)]
        + hostile
    )
    refusal._rule_scanner()
    guarded = 0
    for sentence in sentences:
        expected = refusal._DECLINE.regex.search(sentence)
        if not refusal._DECLINE.may_match(sentence):
            expected = None
        found = refusal._DECLINE.search_end(sentence)
        assert found == (expected and expected.end()), sentence
        candidates = refusal._candidate_rules(sentence)
        guarded += candidates is not None and bool(
            candidates >> 2 * refusal._DECLINE_IDIOM.index & 3
        )
    assert guarded > 100  # the idiom case, where Python's regex decides, is exercised
