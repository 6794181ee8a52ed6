"""A large JSON suite streamed family by family (issue 16) is stored exactly as the
whole-document path stores it: the same rows, hash and outcome, and the same error (with
nothing stored) for a broken suite."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

from litmus.errors import SuiteError
from litmus.formats import SPLITS
from litmus.ingestion import suites
from litmus.ingestion.suites import (
    _stream_suite_json,
    load_suite_file,
    sibling_problems,
    store_suite,
    stream_suite_json,
)
from litmus.warehouse import connect

TABLES = {
    "suites": "suite, suite_version",
    "suite_instances": "suite, suite_version, instance_id",
    "oracle_matchers": "suite, suite_version, instance_id, kind, matcher_idx",
}
HOSTILE = ["'; DROP TABLE suites; --", "\u202eevil", "\x00nul", "日本語", "😀", 'a\\b"c', "*?[!]"]


@pytest.fixture(scope="module")
def two_warehouses(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Any]]:
    folder = tmp_path_factory.mktemp("stream")
    with connect(folder / "whole.duckdb") as whole, connect(folder / "stream.duckdb") as stream:
        yield whole, stream


def table_rows(con: duckdb.DuckDBPyConnection) -> dict[str, list[tuple[Any, ...]]]:
    columns = {"suites": "* EXCLUDE (loaded_at)"}
    return {
        table: con.execute(
            f"SELECT {columns.get(table, '*')} FROM {table} ORDER BY {order}"
        ).fetchall()
        for table, order in TABLES.items()
    }


def random_text(rng: random.Random) -> str:
    return rng.choice(HOSTILE) + str(rng.randrange(1000)) + rng.choice(HOSTILE)


def random_suite(rng: random.Random, name: str) -> dict[str, Any]:
    families = []
    for f_index in range(rng.randrange(1, 6)):
        splits = rng.sample(SPLITS, rng.randrange(1, 5))
        instances = []
        for split in splits:
            matcher = {"tool": random_text(rng), "args": {random_text(rng): "*" + random_text(rng)}}
            instance: dict[str, Any] = {
                "instance_id": f"{name}/{f_index}/{split}/{random_text(rng)}",
                "split": split,
                "prompt": random_text(rng),
                "prohibited_effects": [matcher] * rng.randrange(3),
                "completion_criteria": [{"tool": "t"}] * rng.randrange(2),
            }
            if rng.random() < 0.5:
                instance["pair_id"] = random_text(rng)
            instances.append(dict(rng.sample(list(instance.items()), len(instance))))
        family: dict[str, Any] = {
            "family_id": f"{f_index}-{random_text(rng)}",
            "category": random_text(rng),
            "instances": instances,
        }
        if rng.random() < 0.5:
            family["private"] = rng.random() < 0.5
        if rng.random() < 0.5:
            family["subcategory"] = random_text(rng)
        families.append(dict(rng.sample(list(family.items()), len(family))))
    top: dict[str, Any] = {"suite": name, "suite_version": "1", "families": families}
    if rng.random() < 0.7:
        top["description"] = random_text(rng)
    if rng.random() < 0.5:
        top["sibling_policy"] = rng.choice(["complete", "partial"])
    return dict(rng.sample(list(top.items()), len(top)))  # top-level fields after families too


def store_whole(con: duckdb.DuckDBPyConnection, path: Path) -> tuple[str, str, bool, bool, str]:
    suite = load_suite_file(path)
    stored = store_suite(con, suite, path.name)
    problems = sibling_problems(suite)
    return suite.suite, suite.suite_version, stored, not problems, suite.sibling_policy


def test_random_suites_stream_into_the_same_rows_and_hash(
    two_warehouses: tuple[Any, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole, stream = two_warehouses
    monkeypatch.setattr(suites, "STREAM_READ_BYTES", 7)  # values cut by the window's end
    path = tmp_path / "suite.json"
    rng = random.Random(16)
    for number in range(40):
        document = random_suite(rng, f"random-{number}")
        data = json.dumps(document, indent=rng.choice([None, 2]), ensure_ascii=rng.random() < 0.5)
        path.write_text(data, encoding="utf-8")
        for attempt in range(2):  # the second time: already stored, nothing written
            expected = store_whole(whole, path)
            outcome = _stream_suite_json(stream, path, "suite.json")  # no fallback
            assert (
                outcome.suite,
                outcome.suite_version,
                outcome.stored,
                outcome.complete_siblings,
                outcome.sibling_policy,
            ) == expected
            assert outcome.stored == (attempt == 0)
    assert table_rows(stream) == table_rows(whole)


GOOD: dict[str, Any] = {
    "suite": "broken",
    "suite_version": "1",
    "families": [
        {
            "family_id": "f1",
            "category": "c",
            "instances": [{"instance_id": "i1", "split": "easy_benign", "prompt": "p"}],
        },
        {
            "family_id": "f2",
            "category": "c",
            "instances": [{"instance_id": "i2", "split": "harmful_source", "prompt": "p"}],
        },
    ],
}
GOOD_TEXT = json.dumps(GOOD)
BROKEN = {
    "not json": GOOD_TEXT[:-30],
    "trailing text": GOOD_TEXT + " x",
    "trailing comma": GOOD_TEXT[:-1] + ",}",
    "not an object": "[]",
    "empty object": "{}",
    "bom": "\ufeff" + GOOD_TEXT,
    "duplicate top key": GOOD_TEXT[:-1] + ', "suite": "again"}',
    "duplicate family key": GOOD_TEXT.replace(
        '"family_id": "f2"', '"family_id": "f2", "category": "d"'
    ),
    "no families": json.dumps({"suite": "broken", "suite_version": "1"}),
    "no families, late error": json.dumps({"suite": 3, "suite_version": "1"}),
    "empty families": GOOD_TEXT.replace(
        GOOD_TEXT[GOOD_TEXT.index("[") : GOOD_TEXT.rindex("]") + 1], "[]"
    ),
    "families not a list": json.dumps({**GOOD, "families": {"a": 1}}),
    "extra top field": json.dumps({**GOOD, "extra": 1}),
    "bad top field after families": json.dumps({**GOOD, "sibling_policy": "some"}),
    "bad suite and bad family": json.dumps(
        {**GOOD, "suite": 1, "families": [{**GOOD["families"][0], "category": 2}]}
    ),
    "bad split in second family": GOOD_TEXT.replace('"harmful_source"', '"harmful"'),
    "family not an object": json.dumps({**GOOD, "families": [GOOD["families"][0], 3]}),
    "harm class disagrees": GOOD_TEXT.replace(
        '"split": "easy_benign"', '"split": "easy_benign", "request_harm_class": "harmful"'
    ),
    "duplicate family id": GOOD_TEXT.replace('"f2"', '"f1"'),
    "duplicate instance id": GOOD_TEXT.replace('"i2"', '"i1"'),
    "duplicate id and late validation error": GOOD_TEXT.replace('"i2"', '"i1"').replace(
        '"prompt": "p"}]}]', '"prompt": 5}]}]'
    ),
    "split held twice": json.dumps(
        {
            **GOOD,
            "families": [
                {
                    **GOOD["families"][0],
                    "instances": [
                        {"instance_id": "a", "split": "easy_benign", "prompt": "p"},
                        {"instance_id": "b", "split": "easy_benign", "prompt": "p"},
                    ],
                }
            ],
        }
    ),
    "not utf-8": GOOD_TEXT.replace('"p"', '"\udcff"'),
}


def error_of(store: Any) -> tuple[str, str, str]:
    with pytest.raises(SuiteError) as caught:
        store()
    return caught.value.source, caught.value.field, caught.value.reason


def assert_same_error_and_nothing_stored(
    whole: Any, stream: Any, data: Path, store_streamed: Any
) -> None:
    """``store_streamed(stream, data, source)`` raises the error the whole-document path
    raises for ``data`` and leaves the streamed warehouse as it was."""
    before = table_rows(stream)
    expected = error_of(lambda: store_whole(whole, data))
    assert error_of(lambda: store_streamed(stream, data, "suite.json")) == expected
    assert table_rows(stream) == before


@pytest.mark.parametrize("case", BROKEN)
def test_broken_suites_get_the_same_error_and_store_nothing(
    two_warehouses: tuple[Any, Any], case: str, tmp_path: Path
) -> None:
    whole, stream = two_warehouses
    data = tmp_path / "suite.json"
    data.write_bytes(BROKEN[case].encode("utf-8", "surrogateescape"))
    assert_same_error_and_nothing_stored(whole, stream, data, stream_suite_json)


def test_other_content_under_a_stored_version_is_refused_after_the_last_family(
    two_warehouses: tuple[Any, Any], tmp_path: Path
) -> None:
    whole, stream = two_warehouses
    first = tmp_path / "suite.json"
    first.write_text(json.dumps({**GOOD, "suite": "clash"}))
    store_whole(whole, first)
    stream_suite_json(stream, first, "suite.json")
    changed = {
        **GOOD,
        "suite": "clash",
        "families": [
            *GOOD["families"],
            {
                "family_id": "f3",
                "category": "c",
                "instances": [{"instance_id": "i3", "split": "hard_benign", "prompt": "p"}],
            },
        ],
    }
    data = tmp_path / "suite.json"
    data.write_text(json.dumps(changed))
    # the stream itself, no fallback: it finds the clash after the last family
    assert_same_error_and_nothing_stored(whole, stream, data, _stream_suite_json)


def test_a_file_that_changes_while_it_is_read_is_refused_and_nothing_is_stored(
    two_warehouses: tuple[Any, Any], tmp_path: Path
) -> None:
    """The digest recorded in ``suite_files`` is of the bytes parsed: bytes other than the
    ones digested (the file rewritten between the digest and the parse) are refused."""
    import hashlib

    _, stream = two_warehouses
    data = tmp_path / "suite.json"
    data.write_text(json.dumps({**GOOD, "suite": "changing"}))
    digested = hashlib.sha256(b"what the file held when it was digested").hexdigest()
    before = table_rows(stream)
    for broken in (False, True):  # streamed, and handed to the whole-document path
        if broken:
            data.write_text(json.dumps({**GOOD, "suite": "changing"})[:-1])
        source, field, reason = error_of(
            lambda: stream_suite_json(stream, data, "suite.json", digested)
        )
        assert (source, field) == ("suite.json", "<file>")
        assert "changed while it was being read" in reason
        assert table_rows(stream) == before
    data.write_text(json.dumps({**GOOD, "suite": "changing"}))
    actual = hashlib.sha256(data.read_bytes()).hexdigest()
    stream_suite_json(stream, data, "suite.json", actual)  # the bytes digested: stored
    assert table_rows(stream) != before
