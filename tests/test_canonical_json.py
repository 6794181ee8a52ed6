"""The canonical JSON text is the one every stored digest was computed over: these digests
were recorded with the text as it was before it became one function (litmus/canonical.py),
so a change to it, which would change every fingerprint and receipt, fails here."""

from __future__ import annotations

import json

import pytest

from litmus.canonical import canonical_json, compact_json
from litmus.globmatch import equality_json, match_text
from litmus.trust.receipts.digests import row_digest, rows_digest

ROW = {
    "model": "acmé-chat",
    "rank": 1,
    "boundary_score": 0.8125,
    "tiny": 1e-05,
    "ci": [0.1, None],
    "flag": True,
    "withheld_reasons": None,
    "nested": {"b": 2, "a": "ü\u2028"},
}


def test_a_board_row_and_the_board_digest_as_before() -> None:
    assert canonical_json(ROW) == (
        '{"boundary_score":0.8125,"ci":[0.1,null],"flag":true,"model":"acmé-chat",'
        '"nested":{"a":"ü\u2028","b":2},"rank":1,"tiny":1e-05,"withheld_reasons":null}'
    )
    assert row_digest(ROW) == "0810ec4c9d4d2afbea7726f9adae8efe69e88c3074a1b4dc57f60321c8f3cbae"
    assert rows_digest([("acme", row_digest(ROW)), ("zeta", "0" * 64)]) == (
        "75b4a36d62374331a5b76c8f1a91efbb408a7dd5460fd2a801c7ab4df298670b"
    )


def test_nan_has_no_canonical_text() -> None:
    with pytest.raises(ValueError):
        canonical_json({"x": float("nan")})


def test_equality_text_is_the_canonical_text_of_integral_numbers_as_integers() -> None:
    assert (
        equality_json({"b": 1.0, "a": [2.5, "é", True, None]}) == '{"a":[2.5,"é",true,null],"b":1}'
    )
    assert equality_json(1.0) == equality_json(1) != equality_json(True)


def test_compact_text_keeps_the_value_s_key_order() -> None:
    value = {"z": 1, "a": ["é", 2.0]}
    assert compact_json(value) == '{"z":1,"a":["é",2.0]}'
    assert match_text(value) == compact_json(value)
    assert match_text("text") == "text"
    assert json.loads(compact_json(value)) == value
