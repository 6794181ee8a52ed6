"""Every classification path gives exactly the stored verdicts (tests/refusal_snapshot.py).

The snapshot pins the reference path (Python's regexes alone) to the verdicts, confidences
and rule matches it gave when the snapshot was written; the per-text path with the RE2
scanner and the bulk path (SQL settlement, worker processes) must reproduce them text by
text. Randomized texts then check bulk == reference beyond the stored ones.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from refusal_snapshot import (
    clear_caches,
    read_snapshot,
    reference_verdicts,
    rule_tags,
    verdict_of,
)
from test_refusal_bulk import FRAGMENTS, _random_texts

import litmus.labeling.refusal_bulk as bulk
from litmus.labeling.refusal import RefusalVerdict, RuleBasedRefusalClassifier
from litmus.labeling.refusal_bulk import classify_many

ROWS = read_snapshot()
TRAJECTORIES = [row["texts"] for row in ROWS]
EXPECTED = [verdict_of(row) for row in ROWS]


def _differing(got: list[RefusalVerdict], expected: list[RefusalVerdict]) -> list[object]:
    assert len(got) == len(expected)
    return [
        (texts, g, e)
        for texts, g, e in zip(TRAJECTORIES, got, expected, strict=True)
        if g != e or g.confidence.hex() != e.confidence.hex()
    ]


def test_the_snapshot_covers_every_kind_of_text() -> None:
    singles = [texts[0] for texts in TRAJECTORIES if len(texts) == 1]
    assert len(ROWS) > 3000
    assert {verdict.refusal for verdict in EXPECTED} == {"refused", "partial", "complied"}
    assert "" in singles and any(len(t) > 10_000 for t in singles)
    assert any(not t.isascii() for t in singles) and any(t.isupper() for t in singles)
    assert sum(len(texts) > 1 for texts in TRAJECTORIES) > 300


def test_the_reference_path_reproduces_the_snapshot() -> None:
    assert not _differing(reference_verdicts(TRAJECTORIES), EXPECTED)


def test_the_rules_that_fire_are_the_stored_ones() -> None:
    differing = [
        (row["texts"], row["rules"])
        for row in ROWS
        if [rule_tags(text) for text in row["texts"]] != row["rules"]
    ]
    assert not differing, differing[:3]


def test_the_per_text_path_with_the_scanner_reproduces_the_snapshot() -> None:
    clear_caches()
    classifier = RuleBasedRefusalClassifier()
    assert not _differing([classifier.classify(texts) for texts in TRAJECTORIES], EXPECTED)


@pytest.mark.parametrize("sql_settlement", [True, False])
def test_the_bulk_path_reproduces_the_snapshot(sql_settlement: bool) -> None:
    clear_caches()
    got = classify_many(TRAJECTORIES, sql_settlement=sql_settlement)
    assert not _differing(got, EXPECTED)


def test_the_bulk_path_in_worker_processes_reproduces_the_snapshot(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(bulk, "PARALLEL_MIN_TRAJECTORIES", 1)
    clear_caches()
    assert not _differing(classify_many(TRAJECTORIES, workers=2), EXPECTED)


def _spliced_snapshot_texts(count: int, seed: int) -> list[list[str]]:
    rng = random.Random(seed)
    texts = [text for texts in TRAJECTORIES for text in texts if text]
    joints = [
        "",
        " ",
        "\n",
        ". ",
        ", but ",
        "\n\n",
        ' "',
        "' ",
        "`",
        "\t",
        "\u2019",
        "\xa0",
        "\u202f",
        "\u200b",
        "\n\u3000\u3000\u3000\u3000",
        "\u00ad",
    ]
    out = []
    for _ in range(count):
        pieces = []
        for _ in range(rng.randint(1, 4)):
            text = rng.choice(texts)
            start = rng.randrange(len(text))
            pieces.append(text[start : start + rng.randint(1, 200)])
        text = rng.choice(joints).join(pieces)
        if rng.random() < 0.3:
            text = text.upper() if rng.random() < 0.5 else text.capitalize()
        out.append([text] if rng.random() < 0.8 else [text, rng.choice(texts)])
    return out


def test_bulk_and_reference_agree_on_randomized_texts() -> None:
    seed = random.randrange(1 << 30)  # new texts every run; the seed reproduces a failure
    trajectories = _spliced_snapshot_texts(4000, seed=seed)
    trajectories += [[t] for t in _random_texts(2000, seed=seed)]
    clear_caches()
    got = classify_many(trajectories)
    expected = reference_verdicts(trajectories)
    differing = [(t, g, e) for t, g, e in zip(trajectories, got, expected, strict=True) if g != e]
    assert not differing, (seed, differing[:3])


_PIECES = st.sampled_from(
    [*FRAGMENTS, "I'm sorry, but I can't comply with that.", "(ref 7)", "I won't", "Sure."]
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(_PIECES | st.text(max_size=12), max_size=8).map(" ".join), max_size=3))
def test_bulk_and_reference_agree_on_generated_trajectories(texts: list[str]) -> None:
    assert classify_many([texts]) == reference_verdicts([texts])
