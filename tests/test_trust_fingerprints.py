"""Run fingerprints: the same inputs scored twice are recognised as the same, and a change in
any input the fingerprint covers (raw file, judge, suite, configuration, labeler) changes it."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

from conftest import CONFIG, call, family, instance, matcher, record, suite_doc, write_jsonl
from litmus.fingerprint import (
    compute_run_fingerprints,
    configuration_fingerprints,
    store_run_fingerprints,
    stored_run_fingerprints,
)
from litmus.formats import RunConfig, Suite
from litmus.ingestion.run_files import file_sha256, ingest_file
from litmus.ingestion.suites import store_suite, suite_hash
from litmus.keys import partition_key_for
from litmus.labeling import LABELER_VERSION
from litmus.labeling.refusal import default_classifier
from litmus.labeling.sql import label_partition
from litmus.settings import litmus_paths
from litmus.warehouse import connect

SUITE = suite_doc(
    [
        family(
            f"fam-{n}",
            [
                instance(f"fam-{n}/hs", "harmful_source", prohibited=[matcher("fs.delete")]),
                instance(f"fam-{n}/cm", "covert_malicious", prohibited=[matcher("fs.delete")]),
                instance(f"fam-{n}/eb", "easy_benign", completion=[matcher("fs.list")]),
                instance(f"fam-{n}/hb", "hard_benign", completion=[matcher("fs.list")]),
            ],
        )
        for n in range(3)
    ]
)
OTHER_CONFIG = {**CONFIG, "model": "beta-agent", "model_release": "2026-10-15"}


def run_records(
    run_id: str, config: dict[str, Any], judge: str = "judge-x@3"
) -> list[dict[str, Any]]:
    judgments = {"refusal": "refused", "judge": judge}
    return [
        record(
            f"fam-{n}/{split}",
            [call("fs.list", path="/srv")],
            run_id=run_id,
            config=config,
            judgments=judgments,
        )
        for n in range(3)
        for split in ("hs", "cm", "eb", "hb")
    ]


def score(
    home: Path, files: list[Path], suite: dict[str, Any] = SUITE
) -> duckdb.DuckDBPyConnection:
    """Ingest and label ``files`` in a fresh warehouse; returns an open in-memory copy."""
    paths = litmus_paths(home).ensure()
    with connect(paths.duckdb_path) as con:
        store_suite(con, Suite.model_validate(suite), "suite.json")
        for path in files:
            ingest_file(con, path, paths)
        for (key,) in con.execute("SELECT DISTINCT partition_key FROM raw_trajectories").fetchall():
            label_partition(con, key)
        con.execute("CHECKPOINT")
    return duckdb.connect(str(paths.duckdb_path), read_only=True)


@pytest.fixture
def two_runs(tmp_path: Path) -> list[Path]:
    return [
        write_jsonl(tmp_path / "acme.jsonl", run_records("run-acme", CONFIG)),
        write_jsonl(tmp_path / "beta.jsonl", run_records("run-beta", OTHER_CONFIG)),
    ]


def test_the_same_inputs_scored_twice_get_the_same_fingerprints(
    tmp_path: Path, two_runs: list[Path]
) -> None:
    first = score(tmp_path / "first", two_runs)
    second = score(tmp_path / "second", list(reversed(two_runs)))  # other order, other home
    assert compute_run_fingerprints(first) == compute_run_fingerprints(second)
    fingerprints = configuration_fingerprints(first)
    assert fingerprints == configuration_fingerprints(second)
    assert len(set(fingerprints.values())) == 2


def test_fingerprint_covers_suite_configuration_judge_labeler_and_raw_files(
    tmp_path: Path, two_runs: list[Path]
) -> None:
    con = score(tmp_path / "home", two_runs)
    (acme,) = [fp for fp in compute_run_fingerprints(con) if fp.run_id == "run-acme"]
    covered = json.loads(acme.fingerprint_input)
    assert covered["raw_files"] == [file_sha256(two_runs[0])]
    assert covered["suites"] == [
        {
            "suite": "t-suite",
            "suite_version": "1",
            "suite_hash": suite_hash(Suite.model_validate(SUITE)),
        }
    ]
    assert covered["configuration"] == {
        **{k: v for k, v in CONFIG.items() if k != "policy_version"},
        "policy_versions": ["p1"],
    }
    assert covered["judges"] == ["judge-x@3"]
    assert covered["labeler_versions"] == [LABELER_VERSION]
    assert covered["classifier_versions"] == [default_classifier().version]
    assert acme.partition_key == partition_key_for(RunConfig.model_validate(CONFIG))
    assert acme.n_trajectories == 12


def test_a_changed_input_changes_only_its_own_fingerprint(
    tmp_path: Path, two_runs: list[Path]
) -> None:
    variant = itertools.count()

    def fingerprints_with(
        acme_records: list[dict[str, Any]], suite: dict[str, Any] = SUITE
    ) -> dict[str, str]:
        n = next(variant)
        changed = write_jsonl(tmp_path / f"acme-{n}.jsonl", acme_records)
        con = score(tmp_path / f"home-{n}", [changed, two_runs[1]], suite)
        return {fp.run_id: fp.fingerprint for fp in compute_run_fingerprints(con)}

    baseline = fingerprints_with(run_records("run-acme", CONFIG))

    other_judge = fingerprints_with(run_records("run-acme", CONFIG, judge="judge-y@1"))
    other_policy = fingerprints_with(run_records("run-acme", {**CONFIG, "policy_version": "p2"}))
    one_record_less = fingerprints_with(run_records("run-acme", CONFIG)[:-1])
    other_suite_text = json.loads(json.dumps(SUITE))
    other_suite_text["families"][0]["instances"][0]["prompt"] = "a different prompt"
    other_suite = fingerprints_with(run_records("run-acme", CONFIG), other_suite_text)
    for changed in (other_judge, other_policy, one_record_less, other_suite):
        assert changed["run-acme"] != baseline["run-acme"]
    for changed in (other_judge, other_policy, one_record_less):
        assert changed["run-beta"] == baseline["run-beta"]  # its inputs did not change


def test_another_labeler_version_changes_the_fingerprint(
    tmp_path: Path, two_runs: list[Path]
) -> None:
    paths = litmus_paths(tmp_path / "home")
    score(tmp_path / "home", two_runs).close()
    with connect(paths.duckdb_path) as con:
        before = configuration_fingerprints(con)
        con.execute("UPDATE trajectory_labels SET labeler_version = '9.9.9'")
        after = configuration_fingerprints(con)
    assert before.keys() == after.keys()
    assert all(before[key] != after[key] for key in before)


def test_fingerprints_are_stored_per_run_and_partition(
    tmp_path: Path, two_runs: list[Path]
) -> None:
    paths = litmus_paths(tmp_path / "home")
    score(tmp_path / "home", two_runs).close()
    with connect(paths.duckdb_path) as con:
        assert stored_run_fingerprints(con) == {}
        fingerprints = compute_run_fingerprints(con)
        store_run_fingerprints(con, fingerprints)
        store_run_fingerprints(con, fingerprints)  # replacing, never appending
        stored = stored_run_fingerprints(con)
        inputs = con.execute(
            "SELECT run_id, fingerprint_input FROM run_fingerprints ORDER BY run_id"
        ).fetchall()
    assert stored == {(fp.partition_key, fp.run_id): fp.fingerprint for fp in fingerprints}
    assert [run_id for run_id, _ in inputs] == ["run-acme", "run-beta"]
    assert all(json.loads(text)["run_id"] == run_id for run_id, text in inputs)
