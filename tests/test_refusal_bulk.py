"""The bulk classifier gives exactly the verdicts of ``classify``, text by text."""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest
from refusal_snapshot import clear_caches, reference_verdicts

from conftest import SHARED_DATA
from litmus.labeling import refusal
from litmus.labeling.refusal import RuleBasedRefusalClassifier
from litmus.labeling.refusal_bulk import (
    _one_sentence_fields,
    _prepare_by_lines,
    classify_many,
    settled_in_sql,
)
from litmus.labeling.refusal_eval import DEFAULT_XSTEST_FOLDER, load_xstest_completions

CLASSIFIER = RuleBasedRefusalClassifier()

# Fragments that reach every edge of the SQL settlement: cue triggers and lecture words,
# the placeholder words, quotes and code, apostrophes of every kind, whitespace the rules
# treat specially, case folding that differs between Python and RE2, and lengths near 40.
FRAGMENTS = [
    "Done.",
    "I rotated the logs",
    "the report is ready",
    "see the summary below",
    "OK",
    "I can't",
    "I cannot help",
    "not",
    "no",
    "No ",
    "sorry, but",
    "As an AI",
    "as a",
    "I'm",
    "I’m",
    "I\u2019ll pass",
    "instead",
    "call",
    "Call 988",
    "hotline",
    "please",
    "It's important to",
    "remember",
    "respect",
    "harm",
    "illegal",
    "never",
    "support",
    "code",
    "codeblock",
    "quotation",
    "CODE",
    "`x`",
    "```py\nprint(1)\n```",
    '"quoted"',
    "“curly”",
    "'single'",
    "‘typographic’",
    "> quoted line",
    "users' data",
    "it's",
    "\t",
    "    ",
    "  ",
    "\n",
    "\n\n",
    "\r",
    "\f",
    "\x0b",
    "\xa0",
    "\u2003",
    "\u202f",
    "\u200b",
    "\u00ad",
    "\ufeff",
    "\u2060",
    "\x85",
    "İ",
    "\u212a",
    "ſ",
    "é",
    "—",
    "...",
    "?",
    "!",
    ":",
    "1.",
    "- item",
    "*",
    "(Ticket 7)",
    "(ref 12)",
    "x" * 35,
    "y" * 41,
    "a b c d e f g h i j k l m n o p q r s t",
]


def _random_texts(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    texts = []
    for _ in range(count):
        parts = rng.choices(FRAGMENTS, k=rng.randint(0, 7))
        joints = rng.choices(["", " ", " ", ". ", "\n", ", "], k=len(parts))
        texts.append("".join(p + j for p, j in zip(parts, joints, strict=True)))
    return texts


def _agent_texts() -> list[str]:
    path = SHARED_DATA / "agentharm_transcripts" / "agentharm_trajectories.json"
    if not path.exists():
        return []
    texts = []
    for record in json.loads(path.read_text()):
        for turn in record["contents"][0]:
            if turn["role"] == "agent":
                texts += [turn[key] for key in ("thought", "action") if turn.get(key)]
    return texts


def _expected(trajectories: list[list[str]]) -> list[object]:
    return [CLASSIFIER.classify(texts) for texts in trajectories]


def test_randomized_texts_get_the_verdicts_of_classify() -> None:
    texts = _random_texts(6000, seed=17)
    assert classify_many([[t] for t in texts]) == _expected([[t] for t in texts])


@pytest.mark.skipif(not DEFAULT_XSTEST_FOLDER.is_dir(), reason="XSTest data not present")
def test_real_texts_get_the_verdicts_of_classify() -> None:
    texts = [c.completion for c in load_xstest_completions(DEFAULT_XSTEST_FOLDER)]
    texts += _agent_texts()
    # made unique the way a run makes them unique, and with the usual typographic variants
    texts += [f"{t} (ticket {i})" for i, t in enumerate(texts)]
    texts += [t.replace("'", "\u2019") for t in texts[:300]]
    assert classify_many([[t] for t in texts]) == _expected([[t] for t in texts])


def test_trajectories_of_several_messages_get_the_verdicts_of_classify() -> None:
    rng = random.Random(3)
    texts = [
        *_random_texts(1500, seed=5),
        "Listing the folder now.",
        "I won't delete the backups.",
        "Done: 14 files archived, nothing deleted.",
    ]
    trajectories = [rng.sample(texts, rng.randint(1, 4)) for _ in range(1500)] + [[]]
    assert classify_many(trajectories) == _expected(trajectories)


def test_plain_narration_is_settled_without_the_python_rules() -> None:
    narration = [
        f"Archived {i} log files to the cold storage bucket and rotated the keys."
        for i in range(50)
    ]
    others = ["I can't help with that.", "Done. `rm -rf /` was blocked.", "All set."]
    settled = settled_in_sql(narration + others)
    # a cue or code goes to the rules; a short plain reply is settled at its lower confidence
    long, short = (classify_many([[text]])[0].confidence for text in (narration[0], "All set."))
    assert short < long
    assert settled == {**dict.fromkeys(range(50), long), 52: short}


def test_worker_processes_give_the_same_verdicts(monkeypatch: pytest.MonkeyPatch) -> None:
    import litmus.labeling.refusal_bulk as bulk

    monkeypatch.setattr(bulk, "PARALLEL_MIN_TRAJECTORIES", 1)
    # shares of several blocks each, the last one short, put back in order
    monkeypatch.setattr(bulk, "_SHARE_BLOCK", 16)
    trajectories = [[t] for t in _random_texts(300, seed=11)]
    assert classify_many(trajectories, workers=2) == _expected(trajectories)
    without_sql = classify_many(trajectories, workers=3, sql_settlement=False)
    assert without_sql == _expected(trajectories)


# Counted in a process of its own, as a worker is one: in the test process another thread (a
# server's, a pool's, left by an earlier test) may make cyclic garbage while the collector is
# off. Its caches are warmed with other texts first, then counted over two passes.
_CYCLES_SCRIPT = """
import gc, json, sys
from litmus.labeling.refusal_bulk import classify_many
warm, trajectories = json.loads(open(sys.argv[1], encoding="utf-8").read())
classify_many(warm, sql_settlement=False)
gc.collect()
gc.disable()
found = []
for _ in range(2):
    classify_many(trajectories, sql_settlement=False)
    found.append(gc.collect())
print(json.dumps(found))
"""


def test_the_rules_leave_no_reference_cycles_behind(tmp_path: Path) -> None:
    # why the workers may switch the cyclic garbage collector off (refusal_bulk._classify_share)
    rng = random.Random(8)
    texts = [*_random_texts(3000, seed=21), *_agent_texts()]
    trajectories = [rng.sample(texts, rng.randint(1, 3)) for _ in range(3000)]
    warm = [[text] for text in _random_texts(2000, seed=5)]
    source = tmp_path / "trajectories.json"
    source.write_text(json.dumps([warm, trajectories]), encoding="utf-8")
    counted = subprocess.run(
        [sys.executable, "-c", _CYCLES_SCRIPT, str(source)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(counted.stdout) == [0, 0]


# Pieces of one-sentence replies for the bulk path's one-sentence shortcut
# (refusal_bulk._one_sentence_verdict): every cue family, near misses of each (idioms, past
# failures, tool errors), pivots long enough to count and too short to, concessions,
# placeholders, code words, questions, and the Unicode the preparation rewrites or folds.
_OPENERS = [
    "I can't",
    "I cannot",
    "I won't",
    "I will not",
    "I'm not able to",
    "I am unable to",
    "I'm sorry, but I can't",
    "Sorry, but",
    "Unfortunately, I must decline",
    "I refuse to",
    "I'd rather not",
    "I don't feel comfortable",
    "As an AI language model, I cannot",
    "I'm just an AI and cannot",
    "It's not appropriate to",
    "That would be unethical and",
    "I do not condone violence and",
    "This is a harmful stereotype and",
    "I don't have access to",
    "I'd recommend contacting a licensed professional",
    "Please call 988",
    "Instead, you could",
    "I can't wait to",
    "I can't believe",
    "I won't lie, I can't",
    "I can't stop, and I won't",
    "I'm sorry to hear that, but I can't",
    "I understand why you ask, but I won't",
    "You are being cruel, and it is wrong; I refuse to",
    "I must remind you that I won't",
    "I won't lie,",
    "I couldn't",
    "I was unable to",
    "The API returned an error and I can't",
    "While I can't browse the web,",
    "I",
    "Sure,",
    "I\u2019m not able to",
    "I\u2019ll pass",
    "\u0130 can't",
    "I \u212aan't",
    "I can\u017ft",
    "INSTEAD",
    "",
    "codeblock",
    "quotation",
    "code",
]
_MIDDLES = [
    " help with that",
    " comply with that request",
    " provide the exact quantities",
    " give medical advice",
    " do that",
    " wipe those backups",
    " share personal information",
    " write the detailed step-by-step instructions for it because it is dangerous",
    " delete the files",
    " access the database",
    " stop",
    " help",
    "",
    " codeblock",
    " respect everyone",
    " the premise is flawed",
    " give the specific instructions for making it at home",
    " tell you how to find their home address or their phone number",
    " help with that, but I'd be happy to talk about something else",
    " help with that request; let me know if",
    ", as it violates my guidelines",
]
_TAILS = [
    ".",
    "!",
    "?",
    "",
    " (ref 17)",
    " (ticket 4)",
    ", but here is some general information"
    " about the topic that you may find useful, including the history, the common methods"
    " and the main safety considerations.",
    ", but I can help.",
    ", however, I can provide some general information.",
    ", but there are some safe alternatives you can try instead of"
    " this, which many people use every day with good results.",
    " let me know if you need anything else.",
    " Is there anything else?",
    " \u2014 sorry.",
    "\t.",
    "  .",
]


def _one_sentence_texts(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    texts = []
    for _ in range(count):
        text = rng.choice(_OPENERS) + rng.choice(_MIDDLES) + rng.choice(_TAILS)
        if rng.random() < 0.2:
            text = text.upper() if rng.random() < 0.5 else text.lower()
        if rng.random() < 0.1:
            text = text * rng.randint(2, 30)  # long, up to far beyond a sentence's usual size
        texts.append(text)
    return texts


def test_one_sentence_replies_get_the_reference_verdicts() -> None:
    seed = random.randrange(1 << 30)  # new texts every run; the seed reproduces a failure
    texts = ["", " ", ".", "?", "codeblock", "I can't.", *_one_sentence_texts(4000, seed)]
    trajectories = [[t] for t in texts] + [[t, t] for t in texts[:300]]
    clear_caches()
    got = classify_many(trajectories)
    expected = reference_verdicts(trajectories)
    differing = [(t, g, e) for t, g, e in zip(trajectories, got, expected, strict=True) if g != e]
    assert not differing, (seed, differing[:3])
    # the shortcut was taken: most of these are one sentence, most of those read from the
    # scanner's bits alone, and they span every verdict and every engagement score
    one_sentence = [t for t in texts if len(refusal._prepare(t).sentences) == 1]
    assert len(one_sentence) > len(texts) // 2
    from_bits = [t for t in one_sentence if _one_sentence_fields(refusal._prepare(t).sentences[0])]
    assert len(from_bits) > len(one_sentence) // 2
    assert {v.engagement for v in got} == {None, 0, 1, 2, 3}
    assert {v.refusal for v in got} == {"refused", "partial", "complied"}


# Characters the preparation reads around a line break: quotes of both kinds, apostrophes,
# code marks, block quotes, blanks, sentence marks before capitals, Python-only whitespace and
# line separators str.split("\n") keeps, final sigma (its lowercase depends on the context).
# fmt: off
_LINE_JOINTS = [
    "\n", "\n\n", ". \n", ".\n \nA", ' "\n', '"\n"', "'\n'", "\n'", "'\n", "\n> ", ">\n",
    "\n   ", "\n  \t", " \t\n", "\u2019\n", "\n\u201c", "\u201d\n", ":\n", "!\n\n(", "?\n\n\n*",
    "\r\n", "\x0b\n", "\n\x1c", "\x85\n", "\u2028", "\n\u2029", "\xa0\n", "\u03a3\n\u03a3",
    "\u0130\n", "\n- ", "\n1. ", "\n    x", "\n\tx", "`\n", "\n```\n", "Σ\n",
    "\n\xa0\xa0\xa0\xa0x", "\n\u200b    x", "\n  \u3000 x", "\u200d\n", "\n\u2060>",
    "\n   `x` y\n   `z` ", "``a` `\n", "\n```", "\n    `x`\n\t", "`\n`",
]
# fmt: on


def _multi_line_texts(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    pool = [*FRAGMENTS, *_agent_texts()]
    texts = []
    for _ in range(count):
        pieces = []
        for _ in range(rng.randint(1, 6)):
            text = rng.choice(pool)
            start = rng.randrange(len(text) + 1)
            pieces.append(text[start : start + rng.randint(0, 120)])
        joints = rng.choices(_LINE_JOINTS, k=len(pieces))
        texts.append("".join(p + j for p, j in zip(pieces, joints, strict=True)))
    return texts


def test_texts_prepared_line_by_line_are_prepared_as_a_whole() -> None:
    seed = random.randrange(1 << 30)  # new texts every run; the seed reproduces a failure
    texts = [*_multi_line_texts(20_000, seed), *_random_texts(3000, seed=23)]
    texts += ["\n", "\n\n", " \n ", "a\nb", "A.\nB", "'a\nb'", '"a\nb"', "x\n" * 500]
    differing = [t for t in texts if _prepare_by_lines(t) != refusal._prepare.__wrapped__(t)]
    assert not differing, (seed, differing[:3])
    # most of them were read line by line, many after their code was replaced
    assert sum("\n" in t for t in texts) > len(texts) // 2
    assert sum("\n" in t and ("`" in t or "\n    " in t) for t in texts) > len(texts) // 10


def _names_declined_object_as_written(sentence: str, end: int) -> bool:
    """``refusal.names_declined_object`` as first written (a substring test per literal)."""
    rest = sentence[end:]
    rest = rest[re.match(r"^[\w'-]*", rest).end() :]  # type: ignore[union-attr]
    words = len(rest.split())
    if words < 3:
        return False
    if any(literal in rest for literal in refusal._REASON_LITERALS):
        rest = refusal._REASON.split(rest, maxsplit=1)[0]
        words = len(rest.split())
    return words >= 3 and not refusal._generic_object(rest)


def test_the_declined_object_is_read_as_first_written() -> None:
    seed = random.randrange(1 << 30)  # new texts every run; the seed reproduces a failure
    rng = random.Random(seed)
    sentences = [t.lower() for t in [*_one_sentence_texts(3000, seed), *_random_texts(3000, 5)]]
    sentences += ["", "a", "provid-ing it, as asked", "give x y z as well", "i can't: a b c"]
    for sentence in sentences:
        ends = {0, len(sentence), rng.randint(0, len(sentence))}
        decline_end = refusal._DECLINE.search_end(sentence)
        if decline_end is not None:
            ends.add(decline_end)
        for end in ends:
            expected = _names_declined_object_as_written(sentence, end)
            assert refusal.names_declined_object(sentence, end) == expected, (seed, sentence, end)


# A process that installs its own SIGTERM handler (as the `litmus` command does) and then
# classifies in worker processes; the handler records the pid of any process that runs it.
_HANDLING_PARENT = r"""
import os, signal, sys
import litmus.labeling.refusal_bulk as bulk

def handler(signum, frame):
    with open(sys.argv[1], "a", encoding="utf-8") as out:
        out.write(f"{os.getpid()}\n")
    os._exit(3)

signal.signal(signal.SIGTERM, handler)
bulk.PARALLEL_MIN_TRAJECTORIES = 1
texts = [[f"I can't help with request {i}."] for i in range(200)]
verdicts = bulk.classify_many(texts, workers=2)
print(len(verdicts), sum(v.refusal == "refused" for v in verdicts))
"""


def test_pool_workers_never_run_the_signal_handlers_of_the_process_they_came_from(
    tmp_path: Path,
) -> None:
    handled = tmp_path / "handled"
    done = subprocess.run(
        [sys.executable, "-c", _HANDLING_PARENT, str(handled)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["200", "200"]
    assert not handled.exists(), f"processes that ran the parent's handler: {handled.read_text()}"


# Refusals and non-refusals as written, each with its spaces and letters disguised below.
_PLAIN_TEXTS = [
    "Sorry, but I can't assist with that.",
    "I'm sorry, but I cannot help with hacking into that account. I can explain how to secure "
    "your own account instead.",
    "As an AI language model, I won't write that. Please reach out to a professional.",
    "I rotated the logs and the report is ready.",
    "Here is the plan:\n    step one\n    step two\nI can't promise it works.",
]
_DISGUISES = [
    lambda t: t.replace(" ", "\xa0"),
    lambda t: t.replace(" ", "\u202f").replace("'", "\u2019"),
    lambda t: t.replace(" ", "\u2009\u200b"),
    lambda t: "\ufeff" + "\u200b".join(t),
    lambda t: t.replace("a", "a\u00ad").replace("n", "n\u2060").replace(" ", "\u3000"),
    lambda t: "".join(c + "\U000e0041" if c.isalpha() else c for c in t),
]


@pytest.mark.parametrize("sql_settlement", [True, False])
def test_invisible_characters_read_as_the_plain_text_on_every_path(
    sql_settlement: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    import litmus.labeling.refusal_bulk as bulk

    plain = [[text] for text in _PLAIN_TEXTS]
    disguised = [[disguise(text)] for text in _PLAIN_TEXTS for disguise in _DISGUISES]
    expected = [v for v in _expected(plain) for _ in _DISGUISES]
    assert expected[0].refusal == "refused"
    assert _expected(disguised) == expected
    assert reference_verdicts(disguised) == expected
    assert classify_many(disguised, sql_settlement=sql_settlement) == expected
    monkeypatch.setattr(bulk, "PARALLEL_MIN_TRAJECTORIES", 1)
    assert classify_many(disguised, workers=2, sql_settlement=sql_settlement) == expected


def test_every_unicode_space_and_format_character_is_read_as_plain_text() -> None:
    spaces = {chr(c) for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) == "Zs"}
    formats = {chr(c) for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) == "Cf"}
    assert {c for c in spaces if refusal.plain_text(f"a{c}b") != "a b"} == set()
    assert {c for c in formats if refusal.plain_text(f"a{c}b") != "ab"} == set()
    assert refusal.plain_text("I\u2019m\xa0\u200bhere") == "I'm here"
    # what lets plain_text skip its scan on a printable text
    assert not any(c.isprintable() for c in (spaces - {" "}) | formats)
