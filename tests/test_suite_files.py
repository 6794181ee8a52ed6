"""Suite files are parsed once: the exact bytes seen before are recognized by their SHA-256,
while any other file (reformatted, or changed under a stored version) is validated again."""

from __future__ import annotations

import copy
import gc
import json

import duckdb
import pytest

from conftest import ONE_FAMILY_SUITE
from litmus.errors import LitmusError, SuiteError
from litmus.ingestion.suites import (
    may_clash_with_stored,
    parse_suite_bytes,
    store_suite_file,
    unstored_suite_files,
)
from litmus.settings import LitmusPaths
from litmus.warehouse import connect
from litmus_dagster.cli import ensure_suite_files_fit


def test_a_suite_file_seen_before_is_recognized_and_a_changed_one_still_checked(
    warehouse: duckdb.DuckDBPyConnection, litmus_home: LitmusPaths
) -> None:
    path = litmus_home.suites / "suite.json"
    path.write_text(json.dumps(ONE_FAMILY_SUITE))
    first = store_suite_file(warehouse, path)
    assert first.stored and first.complete_siblings
    again = store_suite_file(warehouse, path)
    assert (again.key, again.stored, again.complete_siblings) == (first.key, False, True)
    assert warehouse.execute("SELECT count(*) FROM suite_files").fetchone() == (1,)

    # the same suite, other bytes: validated again, recognized as the stored content
    path.write_text(json.dumps(ONE_FAMILY_SUITE, indent=4))
    assert not store_suite_file(warehouse, path).stored
    assert warehouse.execute("SELECT count(*) FROM suite_files").fetchone() == (2,)

    # other content under the stored version is still refused, naming the field
    changed = copy.deepcopy(ONE_FAMILY_SUITE)
    changed["families"][0]["category"] = "changed"
    path.write_text(json.dumps(changed))
    with pytest.raises(SuiteError, match="suite_version"):
        store_suite_file(warehouse, path)
    # and a broken file is still named precisely
    path.write_text('{"suite": ')
    with pytest.raises(SuiteError, match="invalid JSON"):
        store_suite_file(warehouse, path)


def test_parsing_a_suite_leaves_the_cycle_collector_as_it_found_it() -> None:
    """Parsing pauses the collector for speed; it is on again after, even after a bad suite,
    and a caller that had switched it off finds it off."""
    good = json.dumps(ONE_FAMILY_SUITE).encode()
    bad = json.dumps({**ONE_FAMILY_SUITE, "suite": ""}).encode()
    assert gc.isenabled()
    assert parse_suite_bytes(good, "suite.json").suite == ONE_FAMILY_SUITE["suite"]
    assert gc.isenabled()
    with pytest.raises(SuiteError, match="suite"):
        parse_suite_bytes(bad, "suite.json")
    assert gc.isenabled()
    gc.disable()
    try:
        parse_suite_bytes(good, "suite.json")
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_only_suite_files_the_warehouse_has_not_stored_are_read_again(
    warehouse: duckdb.DuckDBPyConnection, litmus_home: LitmusPaths
) -> None:
    stored = litmus_home.suites / "stored.json"
    stored.write_text(json.dumps(ONE_FAMILY_SUITE))
    store_suite_file(warehouse, stored)
    reformatted = litmus_home.suites / "reformatted.json"
    reformatted.write_text(json.dumps(ONE_FAMILY_SUITE, indent=2))
    changed = copy.deepcopy(ONE_FAMILY_SUITE)
    changed["families"][0]["category"] = "changed"
    clashing = litmus_home.suites / "clashing.json"
    clashing.write_text(json.dumps(changed))
    broken = litmus_home.suites / "broken.json"
    broken.write_text('{"suite": ')
    files = [stored, reformatted, clashing, broken]
    assert unstored_suite_files(warehouse, files) == [reformatted, clashing, broken]

    # a file is recognized by its bytes only while its suite is still stored
    warehouse.execute("DELETE FROM suites")
    assert unstored_suite_files(warehouse, files) == files


def test_only_a_file_naming_a_stored_suite_version_is_parsed_before_a_run(
    litmus_home: LitmusPaths,
) -> None:
    """`litmus run` parses a suite file up front only when it could clash with a stored
    suite; any other file is validated by suite_catalog as it is stored."""
    malformed = copy.deepcopy(ONE_FAMILY_SUITE)
    malformed["families"][0]["instances"][0]["split"] = "nonsense"
    new_home_file = litmus_home.suites / "new.json"
    new_home_file.write_text(json.dumps(malformed))
    ensure_suite_files_fit(litmus_home, [new_home_file])  # no warehouse: nothing to clash with

    stored = litmus_home.suites / "stored.json"
    stored.write_text(json.dumps(ONE_FAMILY_SUITE))
    with connect(litmus_home.duckdb_path) as con:
        store_suite_file(con, stored)
    other_version = litmus_home.suites / "other-version.json"
    other_version.write_text(json.dumps({**malformed, "suite_version": "other"}))
    families_first = litmus_home.suites / "families-first.json"
    families_first.write_text(
        json.dumps({"families": ONE_FAMILY_SUITE["families"], **ONE_FAMILY_SUITE})
    )
    broken_start = litmus_home.suites / "broken.json"
    broken_start.write_text('{"suite": ')
    yaml_file = litmus_home.suites / "suite.yaml"
    yaml_file.write_text(f"suite: {ONE_FAMILY_SUITE['suite']}\n")
    with connect(litmus_home.duckdb_path) as con:
        assert not may_clash_with_stored(con, other_version)
        assert may_clash_with_stored(con, stored)
        # where the top level is not there to read cheaply, the whole parse decides
        assert may_clash_with_stored(con, families_first)
        assert may_clash_with_stored(con, broken_start)
        assert may_clash_with_stored(con, yaml_file)
    ensure_suite_files_fit(litmus_home, [stored, other_version])  # neither can clash

    # under the stored version: parsed, so a malformed file is named precisely ...
    same_version = litmus_home.suites / "same-version.json"
    same_version.write_text(json.dumps(malformed))
    with pytest.raises(SuiteError, match=r"families\[0\]\.instances\[0\]\.split"):
        ensure_suite_files_fit(litmus_home, [same_version])
    # ... and other content is refused as a clash
    changed = copy.deepcopy(ONE_FAMILY_SUITE)
    changed["families"][0]["category"] = "changed"
    same_version.write_text(json.dumps(changed))
    with pytest.raises(LitmusError, match="already stored with different content"):
        ensure_suite_files_fit(litmus_home, [same_version])
