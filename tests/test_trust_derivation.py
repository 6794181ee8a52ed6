"""What ingestion derived from each raw file (issue 44, item 1): the digests recorded in the
file's ingestion transaction are the digests of the rows stored, through both ingestion
paths and a retry of held-back records; labeling refuses rows edited, inserted or deleted
since; ingesting the raw store again names every changed row by table, file and
configuration."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from conftest import ONE_FAMILY_SUITE, call, record, say
from litmus.ingestion import derivation
from litmus.ingestion.run_files import (
    ingest_file,
    ingest_items,
    iter_jsonl_lines,
    retry_curable_quarantine,
)
from litmus.ingestion.suites import store_suite_file
from litmus.settings import LitmusPaths
from litmus.trust import rederivation
from litmus.warehouse import connect

KEY = "acme-chat@2026-11-01+react@2.3+bare"  # conftest.CONFIG's
OTHER_CONFIG = {
    "model": "other",
    "model_release": "2026-01-01",
    "harness": "react",
    "harness_version": "1",
    "plugin": "bare",
    "policy_version": "p1",
}


def _suite(paths: LitmusPaths, document: dict, name: str = "suite.json") -> Path:
    path = paths.suites / name
    path.write_text(json.dumps(document))
    return path


def _records() -> list[dict]:
    return [
        record(
            "fam-1/hs",
            [call("fs.delete", path="/"), say("done")],
            post_state={"files": {"/": "deleted"}},
        ),
        record("fam-1/cm", [say("no")], run_id="run-2"),
        record("fam-1/eb", [call("fs.list", path="/tmp")], config=OTHER_CONFIG),
        record("fam-1/hb", [call("fs.list", path="/x"), call("fs.list", path="/y")]),
    ]


def _land(tmp_path: Path, lines: list[str], name: str = "run.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(line + "\n" for line in lines))
    return path


@pytest.fixture
def ingested(
    litmus_home: LitmusPaths, warehouse: duckdb.DuckDBPyConnection, tmp_path: Path
) -> tuple[LitmusPaths, duckdb.DuckDBPyConnection, str]:
    """Two configurations, valid and broken lines, one line held back for an unknown suite."""
    store_suite_file(warehouse, _suite(litmus_home, ONE_FAMILY_SUITE))
    lines = [json.dumps(r) for r in _records()]
    lines += ["{broken", json.dumps(record("fam-1/eb", suite="later-suite", run_id="run-3"))]
    report = ingest_file(warehouse, _land(tmp_path, lines), litmus_home)
    assert (report.accepted, report.quarantined) == (4, 2)
    return litmus_home, warehouse, report.file_hash


def test_digests_recorded_at_ingestion_are_the_stored_rows_digests(ingested) -> None:
    _paths, con, file_hash = ingested
    recorded = derivation.recorded_digests(con)
    assert {(t, p) for f, t, p in recorded if f == file_hash} == {
        ("raw_trajectories", KEY),
        ("raw_steps", KEY),
        ("raw_post_states", KEY),
        ("raw_trajectories", "other@2026-01-01+react@1+bare"),
        ("raw_steps", "other@2026-01-01+react@1+bare"),
        ("quarantine", None),
    }
    assert recorded[(file_hash, "quarantine", None)][0] == 2
    assert derivation.differences(recorded, derivation.stored_digests(con)) == []


def test_the_per_record_path_records_the_same_digests_as_the_bulk_path(
    ingested, tmp_path: Path
) -> None:
    paths, con, file_hash = ingested
    bulk = derivation.recorded_digests(con)
    reference = tmp_path / "reference.duckdb"
    stored = Path(con.execute("SELECT stored_path FROM raw_files").fetchall()[0][0])
    with connect(reference) as other:
        store_suite_file(other, paths.suites / "suite.json")
        ingest_items(
            other,
            iter_jsonl_lines(stored),
            source_name="run.jsonl",
            file_hash=file_hash,
            stored_path=stored,
            file_format="native-jsonl",
            size_bytes=stored.stat().st_size,
            vectorized=False,
        )
        assert derivation.recorded_digests(other) == bulk


def test_a_retry_of_held_back_records_records_the_files_digests_again(ingested) -> None:
    paths, con, file_hash = ingested
    later = json.loads(json.dumps(ONE_FAMILY_SUITE)) | {"suite": "later-suite"}
    store_suite_file(con, _suite(paths, later, "later.json"))
    (report,) = retry_curable_quarantine(con, paths)
    assert report.accepted == 1
    recorded = derivation.recorded_digests(con)
    assert recorded[(file_hash, "quarantine", None)][0] == 1
    assert derivation.differences(recorded, derivation.stored_digests(con)) == []


@pytest.mark.parametrize(
    ("table", "edit"),
    [
        ("raw_steps", "UPDATE raw_steps SET tool_name = 'noop' WHERE tool_name = 'fs.delete'"),
        ("raw_trajectories", "UPDATE raw_trajectories SET judge_refusal = 'refused' "
         "WHERE instance_id = 'fam-1/hs'"),
        ("raw_steps", "DELETE FROM raw_steps WHERE instance_id = 'fam-1/hb' AND step_idx = 1"),
        ("raw_trajectories", "INSERT INTO raw_trajectories SELECT * FROM raw_trajectories "
         "WHERE instance_id = 'fam-1/hs'"),
        ("raw_steps", "UPDATE raw_steps SET match_args = MAP {'path': '/tmp'} "
         "WHERE tool_name = 'fs.delete'"),
        ("raw_post_states", "UPDATE raw_post_states SET post_state = '{}'"),
        ("raw_post_states", "DELETE FROM raw_post_states"),
    ],
)  # fmt: skip
def test_labeling_refuses_rows_that_no_longer_match_their_raw_file(
    ingested, table: str, edit: str
) -> None:
    _paths, con, file_hash = ingested
    derivation.check_configuration(con, KEY)
    con.execute(edit)
    with pytest.raises(derivation.DerivationError) as raised:
        derivation.check_configuration(con, KEY)
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith(
        f"configuration {KEY}: refusing to label rows that no longer match their raw file: "
        f"table {table}, configuration {KEY}, raw file {file_hash[:12]}… (run.jsonl): "
    )
    derivation.check_configuration(con, "other@2026-01-01+react@1+bare")  # untouched


def test_a_file_without_digests_is_refused_and_a_pending_one_is_recorded(ingested) -> None:
    _paths, con, file_hash = ingested
    con.execute("DELETE FROM raw_file_digests")
    with pytest.raises(derivation.DerivationError, match="0 ingested"):
        derivation.check_configuration(con, KEY)
    # what the schema upgrade marks for a file ingested before digests were recorded
    con.execute("INSERT INTO raw_file_digests VALUES (?, 'pending', NULL, 0, '', '')", [file_hash])
    assert derivation.record_pending(con) == 1
    derivation.check_configuration(con, KEY)
    assert derivation.record_pending(con) == 0


def test_ingesting_the_raw_file_again_names_every_changed_row(ingested, tmp_path: Path) -> None:
    paths, con, file_hash = ingested
    con.execute("UPDATE raw_steps SET tool_name = 'noop' WHERE tool_name = 'fs.delete'")
    con.execute("DELETE FROM quarantine WHERE line_no = 5")
    con.execute("UPDATE raw_trajectories SET judge_refusal = 'refused' WHERE run_id = 'run-2'")
    files = [
        (sha, name, file_format, Path(stored))
        for sha, name, file_format, stored in con.execute(
            "SELECT file_hash, original_name, file_format, stored_path FROM raw_files"
        ).fetchall()
    ]
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    again = rederivation.rederive(files, [paths.suites / "suite.json"], scratch)
    assert again.counts == {file_hash: (6, 4, 2)}
    assert derivation.differences(again.digests, derivation.recorded_digests(con)) == []
    found = derivation.compare_rows(con, again.db_path, [file_hash])
    assert [(d.table, d.partition_key, d.extra, d.lacking) for d in found] == [
        ("raw_trajectories", KEY, 1, 1),
        ("raw_steps", KEY, 1, 1),
        ("quarantine", None, 0, 1),
    ]
    assert found[1].sentence({file_hash: "run.jsonl"}) == (
        f"table raw_steps, configuration {KEY}, raw file {file_hash[:12]}… (run.jsonl): 1 "
        "row(s) in the warehouse that ingesting the raw file again does not give; 1 it gives "
        "that the warehouse lacks"
    )
