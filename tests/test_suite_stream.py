"""A large JSON suite streamed family by family (issue 16) is stored exactly as the
whole-document path stores it: the same rows, hash and outcome, and the same error (with
nothing stored) for a broken suite."""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

from litmus.errors import SuiteError
from litmus.formats import SPLITS, Suite
from litmus.globmatch import translate_glob_both
from litmus.ingestion import suites
from litmus.ingestion.suites import (
    _stream_suite_json,
    load_suite_file,
    sibling_problems,
    store_suite,
    stream_suite_json,
    suite_hash,
)
from litmus.warehouse import connect

TABLES = {
    "suites": "suite, suite_version",
    "suite_instances": "suite, suite_version, instance_id",
    "oracle_matchers": "suite, suite_version, instance_id, kind, matcher_idx",
}
HOSTILE = [
    "'; DROP TABLE suites; --",
    "\u202eevil",
    "\x00nul",
    "日本語",
    "😀",
    'a\\b"c',
    "*?[!]",
    "\x7fdel\u2028",
    "[é-ü]x[a-c]",
]


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
            args = {random_text(rng): "*" + random_text(rng) for _ in range(rng.randrange(4))}
            matcher = {"tool": random_text(rng), "args": args}
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
    if rng.random() < 0.3:
        held = sorted({i["split"] for f in families for i in f["instances"]})
        top["runnable_splits"] = rng.sample(held, rng.randrange(1, len(held) + 1))
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


def reference_hash(suite: Suite) -> str:
    """``suite_hash`` as first written, the whole suite dumped and encoded in one call: the
    digest of every suite stored so far, which must never change."""
    document = suite.model_dump(mode="json")
    if document["runnable_splits"] is None:  # a top-level field added since
        del document["runnable_splits"]
    for family in document["families"]:
        if not family.get("private"):
            family.pop("private", None)
        for instance in family["instances"]:  # fields added since, left out when empty
            for name in ("prohibited_states", "completion_states"):
                if not instance[name]:
                    del instance[name]
    canonical = json.dumps(document, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


INSTANCE_COLUMNS = (
    "suite, suite_version, family_id, category, subcategory, instance_id, split, "
    "request_harm_class, declared_harm_class, prompt, pair_id, register, n_prohibited, "
    "n_completion, private"
)
MATCHER_COLUMNS = "suite, suite_version, instance_id, kind, matcher_idx, tool, arg_patterns"


def reference_rows(suite: Suite) -> dict[str, list[tuple[Any, ...]]]:
    """The rows storing ``suite`` must write, in the order written, built cell by cell."""
    instances, matchers = [], []
    stored_as = (suite.suite, suite.suite_version)
    for family in suite.families:
        for instance in family.instances:
            prohibited, completion = instance.prohibited_effects, instance.completion_criteria
            instances.append(
                (
                    *stored_as,
                    *(family.family_id, family.category, family.subcategory),
                    *(instance.instance_id, instance.split, instance.harm_class),
                    *(instance.request_harm_class, instance.prompt, instance.pair_id),
                    *(instance.register, len(prohibited), len(completion), family.private),
                )
            )
            for kind, group in (("prohibited", prohibited), ("completion", completion)):
                for index, matcher in enumerate(group):
                    patterns = []
                    for key, pattern in matcher.args.items():
                        glob, regex = translate_glob_both(pattern)
                        patterns.append(
                            {
                                "arg_key": key,
                                "pattern": pattern,
                                "glob_pattern": glob,
                                "regex_pattern": regex,
                            }
                        )
                    matchers.append(
                        (*stored_as, instance.instance_id, kind, index, matcher.tool, patterns)
                    )
    return {"suite_instances": instances, "oracle_matchers": matchers}


def stored_rows(con: duckdb.DuckDBPyConnection, suite: Suite) -> dict[str, list[tuple[Any, ...]]]:
    """The rows of ``suite`` in the order they were written (rowid)."""
    return {
        table: con.execute(
            f"SELECT {columns} FROM {table} WHERE suite = ? AND suite_version = ? ORDER BY rowid",
            [suite.suite, suite.suite_version],
        ).fetchall()
        for table, columns in (
            ("suite_instances", INSTANCE_COLUMNS),
            ("oracle_matchers", MATCHER_COLUMNS),
        )
    }


def test_both_paths_store_the_rows_and_hash_built_cell_by_cell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Against references kept in this test (not the code under test): the hash of the whole
    dumped suite and the rows built one cell at a time, in order, over random suites with
    hostile strings, several arguments a matcher, none at all, and batches of two families
    (rows and the translation cache across batches)."""
    monkeypatch.setattr(suites, "STREAM_BATCH_FAMILIES", 2)
    path = tmp_path / "suite.json"
    rng = random.Random(1616)
    documents = [random_suite(rng, f"reference-{number}") for number in range(30)]
    no_matchers = random_suite(rng, "no-matchers")
    for family in no_matchers["families"]:
        for instance in family["instances"]:
            instance["prohibited_effects"] = instance["completion_criteria"] = []
    with connect(tmp_path / "whole.duckdb") as whole, connect(tmp_path / "s.duckdb") as stream:
        for document in [*documents, no_matchers]:
            path.write_text(json.dumps(document, ensure_ascii=rng.random() < 0.5), "utf-8")
            suite = load_suite_file(path)
            assert suite_hash(suite) == reference_hash(suite)
            store_suite(whole, suite, path.name)
            _stream_suite_json(stream, path, path.name)
            expected = reference_rows(suite)
            for con in (whole, stream):
                assert stored_rows(con, suite) == expected
                stored_hash = con.execute(
                    "SELECT suite_hash FROM suites WHERE suite = ?", [suite.suite]
                ).fetchone()
                assert stored_hash == (reference_hash(suite),)


# (pattern, DuckDB GLOB, RE2) as the translator wrote them before it read a run of plain
# characters as one token: the strings stored in oracle_matchers must stay the same. A
# pattern with '?' or a negated class has no GLOB (DuckDB 1.5's GLOB reads those as one
# byte, not one character): its regex matches it.
STORED_TRANSLATIONS = [
    (
        "*moved to Wednesday*",
        "*moved to Wednesday*",
        "(?s:.*)\\x{6d}\\x{6f}\\x{76}\\x{65}\\x{64}\\x{20}\\x{74}\\x{6f}\\x{20}\\x{57}\\x{65}"
        "\\x{64}\\x{6e}\\x{65}\\x{73}\\x{64}\\x{61}\\x{79}(?s:.*)",
    ),
    ("a**b?c", None, "\\x{61}(?s:.*)\\x{62}(?s:.)\\x{63}"),
    ("[!ab]x[a-c]", None, "[^\\x{61}\\x{62}]\\x{78}[\\x{61}-\\x{63}]"),
    (
        "unclosed [ab",
        "unclosed [[]ab",
        "\\x{75}\\x{6e}\\x{63}\\x{6c}\\x{6f}\\x{73}\\x{65}\\x{64}\\x{20}\\x{5b}\\x{61}\\x{62}",
    ),
    ("[]]*", "[]]*", "\\x{5d}(?s:.*)"),
    (
        "\\*é😀\x00\x7f",
        "[\\]*é😀\x00\x7f",
        "\\x{5c}(?s:.*)\\x{e9}\\x{1f600}\\x{0}\\x{7f}",
    ),
    ("[[]x[?]", "[[]x[?]", "\\x{5b}\\x{78}\\x{3f}"),
    ("[é-ü]?", None, "[\\x{e9}-\\x{fc}](?s:.)"),
    ("", "", ""),
    ("[z-a]end", None, "[^\\x{0}-\\x{10FFFF}]\\x{65}\\x{6e}\\x{64}"),
]


@pytest.mark.parametrize(("pattern", "glob", "regex"), STORED_TRANSLATIONS)
def test_pattern_translations_are_the_strings_stored_before(
    pattern: str, glob: str | None, regex: str
) -> None:
    assert translate_glob_both(pattern) == (glob, regex)


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
