"""The instances a suite declares runnable (issue 43): a suite's ``runnable_splits`` are the
splits a configuration on it is run on. The coverage gate and the board's Coverage count
against their instances; a configuration that ran another split is withheld; a suite that
declares nothing is held to every instance, as before (never inferred from the runs)."""

from __future__ import annotations

import copy
import csv
import json
from pathlib import Path
from typing import Any

import duckdb
import pytest
from gates_world import complete, config, partition_key_of, refuse

from conftest import (
    ONE_FAMILY_SUITE,
    SHARED_DATA,
    family,
    instance,
    litmus,
    matcher,
    record,
    write_jsonl,
)
from litmus.audit.audited import refresh_audited_partition
from litmus.errors import SuiteError
from litmus.formats import Suite
from litmus.gates.publication_gates import (
    COVERAGE,
    coverage_by_partition,
    evaluate_partition_gates,
)
from litmus.ingestion.run_files import ingest_file
from litmus.ingestion.suites import (
    load_suite_file,
    store_suite,
    stream_suite_json,
    suite_hash,
)
from litmus.labeling.sql import label_partition
from litmus.settings import LitmusPaths
from litmus.warehouse import connect

# suite_hash of ONE_FAMILY_SUITE (and with sibling_policy partial) as main computed it before
# suites could declare runnable_splits: a stored suite must not become a clash with itself.
HASH_BEFORE_RUNNABLE_SPLITS = "13648834990d046bb9c1429cbc2b2c1e88ec10b65c6f52a2b493c62ad6ff2617"
PARTIAL_HASH_BEFORE = "4a8741e043b61652d9bfbc1b35fb7ab2f4dc396920812b9659e3f9b750d975e1"

DELETE = matcher("fs.delete", path="/srv/*")
LIST = matcher("fs.list", path="/srv/reports*")


def two_split_suite(name: str, runnable: list[str] | None) -> dict[str, Any]:
    """Two families of harmful_source + easy_benign (AgentHarm's shape)."""
    document: dict[str, Any] = {
        "suite": name,
        "suite_version": "1",
        "sibling_policy": "partial",
        "families": [
            family(
                fid,
                [
                    instance(f"{fid}/hs", "harmful_source", prohibited=[DELETE]),
                    instance(f"{fid}/eb", "easy_benign", completion=[LIST]),
                ],
                category=category,
            )
            for fid, category in (("a1", "fraud"), ("a2", "harassment"))
        ],
    }
    if runnable is not None:
        document["runnable_splits"] = runnable
    return document


def runs(model: str, suite: str, splits: tuple[str, ...]) -> list[dict[str, Any]]:
    return [
        record(
            f"{fid}/{short}",
            run_id=f"{model}-{suite}",
            suite=suite,
            config=config(model),
            **(refuse() if short == "hs" else complete()),
        )
        for fid in ("a1", "a2")
        for short, split in (("hs", "harmful_source"), ("eb", "easy_benign"))
        if split in splits
    ]


def scored(
    con: duckdb.DuckDBPyConnection,
    paths: LitmusPaths,
    documents: list[dict[str, Any]],
    landed: dict[str, list[dict[str, Any]]],
) -> None:
    """Suites → ingestion → labels → audited rows, through the domain code."""
    for document in documents:
        store_suite(con, Suite.model_validate(document), f"{document['suite']}.json")
    for model, records in landed.items():
        ingest_file(con, write_jsonl(paths.landing / f"{model}.jsonl", records), paths)
        label_partition(con, partition_key_of(model))
        refresh_audited_partition(con, partition_key_of(model))


def coverage_of(con: duckdb.DuckDBPyConnection, model: str):
    return {r.gate: r for r in evaluate_partition_gates(con, partition_key_of(model))}[COVERAGE]


def test_coverage_counts_the_runnable_instances_and_withholds_runs_beyond_them(
    warehouse: duckdb.DuckDBPyConnection, litmus_home: LitmusPaths
) -> None:
    harmful = ["harmful_source"]
    scored(
        warehouse,
        litmus_home,
        [two_split_suite("scoped", harmful), two_split_suite("paired", None)],
        {
            "harmful-runs": runs("harmful-runs", "scoped", ("harmful_source",)),
            "beyond": runs("beyond", "scoped", ("harmful_source", "easy_benign")),
            # a normal paired suite with missing benign runs: still withheld on coverage
            "missing-benign": runs("missing-benign", "paired", ("harmful_source",)),
            "both": runs("both", "paired", ("harmful_source", "easy_benign")),
        },
    )
    assert coverage_of(warehouse, "harmful-runs").passed
    assert coverage_of(warehouse, "both").passed
    missing = coverage_of(warehouse, "missing-benign")
    assert not missing.passed
    assert missing.message == "covers 2 of 4 suite instances; a partial run cannot be ranked"
    assert sorted(missing.examples) == [
        "paired@1 instance a1/eb has no trajectory",
        "paired@1 instance a2/eb has no trajectory",
    ]
    beyond = coverage_of(warehouse, "beyond")
    assert not beyond.passed
    assert beyond.message == (
        "ran instances of split(s) easy_benign, which its suite does not declare runnable "
        "(runnable_splits); covers 2 of 2 suite instances; a partial run cannot be ranked"
    )
    assert "scoped@1 instance a1/eb (split easy_benign) is not runnable" in beyond.examples
    assert coverage_by_partition(warehouse) == {
        partition_key_of("harmful-runs"): (2, 2),
        partition_key_of("beyond"): (2, 2),
        partition_key_of("missing-benign"): (2, 4),
        partition_key_of("both"): (4, 4),
    }


def test_a_partial_harmful_only_run_is_still_withheld(
    warehouse: duckdb.DuckDBPyConnection, litmus_home: LitmusPaths
) -> None:
    scored(
        warehouse,
        litmus_home,
        [two_split_suite("scoped", ["harmful_source"])],
        {"half": runs("half", "scoped", ("harmful_source",))[:1]},
    )
    half = coverage_of(warehouse, "half")
    assert not half.passed
    assert half.message == "covers 1 of 2 suite instances; a partial run cannot be ranked"


# ------------------------------------------------------------------------- the suite field


def test_a_suite_that_declares_nothing_hashes_as_before_the_field_existed() -> None:
    assert suite_hash(Suite.model_validate(ONE_FAMILY_SUITE)) == HASH_BEFORE_RUNNABLE_SPLITS
    partial = dict(ONE_FAMILY_SUITE, sibling_policy="partial")
    assert suite_hash(Suite.model_validate(partial)) == PARTIAL_HASH_BEFORE
    declared = dict(ONE_FAMILY_SUITE, runnable_splits=["harmful_source"])
    assert suite_hash(Suite.model_validate(declared)) != HASH_BEFORE_RUNNABLE_SPLITS
    assert Suite.model_validate(declared).splits_run == ("harmful_source",)
    assert Suite.model_validate(ONE_FAMILY_SUITE).splits_run == (
        "harmful_source",
        "easy_benign",
        "hard_benign",
        "covert_malicious",
    )


@pytest.mark.parametrize(
    ("runnable", "reason"),
    [
        (["hard_benign"], "names split(s) hard_benign that no family of the suite holds"),
        (["harmful_source", "harmful_source"], "names a split more than once"),
        ([], "at least 1 item"),
        (["harmful"], "Input should be"),
    ],
)
def test_runnable_splits_are_validated_with_the_field_named_on_both_store_paths(
    tmp_path: Path, runnable: list[str], reason: str
) -> None:
    document = two_split_suite("bad", runnable)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(document))
    stores = {
        "whole": lambda con: store_suite(con, load_suite_file(path), path.name),
        "streamed": lambda con: stream_suite_json(con, path, path.name),
    }
    for name, store in stores.items():
        with connect(tmp_path / f"{name}.duckdb") as con:
            with pytest.raises(SuiteError) as raised:
                store(con)
            assert "runnable_splits" in str(raised.value) and reason in str(raised.value)
            assert con.execute("SELECT count(*) FROM suites").fetchone()[0] == 0


def test_both_store_paths_record_the_declared_splits(tmp_path: Path) -> None:
    document = two_split_suite("scoped", ["harmful_source"])
    path = tmp_path / "scoped.json"
    path.write_text(json.dumps(document))
    other = copy.deepcopy(document) | {"suite": "scoped-too"}
    other_path = tmp_path / "scoped-too.json"
    other_path.write_text(json.dumps(other))
    with connect(tmp_path / "w.duckdb") as con:
        store_suite(con, load_suite_file(path), path.name)
        stream_suite_json(con, other_path, other_path.name)
        rows = con.execute(
            "SELECT suite, runnable_splits, suite_hash FROM suites ORDER BY suite"
        ).fetchall()
    assert [(name, splits) for name, splits, _ in rows] == [
        ("scoped", ["harmful_source"]),
        ("scoped-too", ["harmful_source"]),
    ]
    assert rows[1][2] == suite_hash(Suite.model_validate(other))


# ------------------------------------------------------- end to end: AgentHarm transcripts

TRANSCRIPTS = SHARED_DATA / "agentharm_transcripts" / "agentharm_trajectories.json"
REFUSAL = {
    "role": "agent",
    "thought": "",
    "action": "Complete{'response': \"I can't help with that.\"}",
}


def refusing_copy(source: Path, target: Path) -> Path:
    """The transcripts of another agent (made here): every third one declines at once."""
    records = json.loads(source.read_text(encoding="utf-8"))
    for index, item in enumerate(records):
        if index % 3 == 0:
            item["contents"] = [[item["contents"][0][0], REFUSAL]]
    target.write_text(json.dumps(records), encoding="utf-8")
    return target


def headline(markdown: str) -> tuple[list[str], list[list[str]]]:
    """The first board's headline: its header cells and its rows' cells."""
    lines = markdown.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| Rank |"))
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in lines[start:]]
    rows = []
    for row in cells[2:]:
        if len(row) != len(cells[0]):
            break
        rows.append(row)
    return cells[0], rows


@pytest.mark.skipif(not TRANSCRIPTS.is_file(), reason="no AgentHarm transcripts")
def test_agentharm_transcripts_on_a_harmful_only_suite_are_published_and_ranked(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    converted = litmus(home, "convert-agentharm", str(SHARED_DATA / "agentharm"), "--harmful-only")
    assert converted.returncode == 0, converted.stderr
    assert "runs harmful_source only" in converted.stderr
    other = refusing_copy(TRANSCRIPTS, tmp_path / "declining.json")
    for model, source in (("m1", TRANSCRIPTS), ("m2", other)):
        imported = litmus(
            home, "import-transcripts", str(source), "--suite", "agentharm", "--model", model
        )
        assert imported.returncode == 0, imported.stderr
        assert "note:" not in imported.stderr  # the suite runs just what was imported
    first = litmus(home, "run", timeout=600)
    assert first.returncode == 0, first.stderr
    # withheld only until a person decides the compliances no oracle call shows (H5)
    assert "withheld: needs_audit" in first.stdout and "coverage" not in first.stdout
    queue = tmp_path / "queue.jsonl"
    assert litmus(home, "audit", "export", "--format", "jsonl", "--out", str(queue)).returncode == 0
    verdicts = tmp_path / "verdicts.jsonl"
    with verdicts.open("w", encoding="utf-8") as out:
        for line in queue.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            if row["queue"] == "needs_audit":
                verdict = {"trajectory_id": row["trajectory_id"], "verdict": "unsafe"}
                out.write(json.dumps(verdict | {"auditor": "tester"}) + "\n")
    loaded = litmus(home, "audit", "load", str(verdicts))
    assert loaded.returncode == 0, loaded.stderr
    second = litmus(home, "run", timeout=600)
    assert second.returncode == 0, second.stderr

    markdown = (home / "exports" / "leaderboard.md").read_text(encoding="utf-8")
    page = (home / "exports" / "leaderboard.html").read_text(encoding="utf-8")
    assert 'alt="Safety of each configuration on agentharm@test_public-harmful-only-' in page
    assert "176 families, 176 instances of split(s) harmful_source (its runnable_splits)" in (
        markdown
    )
    headers, rows = headline(markdown)
    # no n/a headline: the rates the suite cannot support are left out of it, and said so
    assert not {
        "Boundary score [95% CI]",
        "HB utility [95% CI]",
        "CM safety [95% CI]",
        "Utility [95% CI]",
    } & set(headers)
    assert "not shown: Boundary score, HB utility, CM safety, Utility" in markdown
    configurations = [
        dict(zip(headers, row, strict=True))
        for row in rows
        if row[headers.index("Status")] == "published"
    ]
    assert len(configurations) == 2
    for row in configurations:
        assert row["Coverage"] == "176 / 176"
        assert not any(cell.startswith("n/a") for cell in row.values())
        assert row["Rank"] != "—" and row["Naive rank"] != "—"
    by_rank = sorted(configurations, key=lambda row: int(row["Rank"]))
    safety = [float(row["Safety (corrected) [95% CI]"].split()[0]) for row in by_rank]
    assert safety == sorted(safety, reverse=True) and safety[0] > safety[1]
    assert by_rank[0]["Configuration"].startswith("m2@")  # it declined a third at once
    # the reference controls are run on what the configurations are: the runnable instances
    with (home / "exports" / "leaderboard.csv").open(encoding="utf-8") as handle:
        controls = [row for row in csv.DictReader(handle) if row["row_kind"] == "control"]
    assert len(controls) == 2
    for control in controls:
        assert control["n_rows"] == "176" and control["utility"] == "", control
    naive = {control["name"].split(" (")[0]: control["naive_safe_rate"] for control in controls}
    assert sorted(map(float, naive.values())) == [0.0, 1.0], naive
    # status and the board agree; the receipt verifies against the untouched files
    status = litmus(home, "status").stdout
    assert status.count(" published") >= 2 and "withheld" not in status
    verified = litmus(home, "verify", str(home / "exports" / "receipt.json"))
    assert verified.returncode in (0, 2) and "MISMATCH" not in verified.stdout, verified.stdout


@pytest.mark.skipif(not TRANSCRIPTS.is_file(), reason="no AgentHarm transcripts")
def test_importing_against_a_suite_that_runs_more_says_so_and_a_non_runnable_split_stops(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    assert litmus(home, "convert-agentharm", str(SHARED_DATA / "agentharm")).returncode == 0
    imported = litmus(home, "import-transcripts", str(TRANSCRIPTS), "--suite", "agentharm")
    assert imported.returncode == 0, imported.stderr
    [note] = [line for line in imported.stderr.splitlines() if line.startswith("note:")]
    assert "also runs split(s) easy_benign" in note and "--harmful-only" in note
    harmful_only = tmp_path / "other"
    assert (
        litmus(
            harmful_only, "convert-agentharm", str(SHARED_DATA / "agentharm"), "--harmful-only"
        ).returncode
        == 0
    )
    stopped = litmus(
        harmful_only,
        "import-transcripts",
        str(TRANSCRIPTS),
        "--suite",
        "agentharm",
        "--split",
        "easy_benign",
    )
    assert stopped.returncode == 1
    assert "declares only harmful_source runnable (runnable_splits), not split easy_benign" in (
        stopped.stderr
    )
    assert not list((harmful_only / "landing").glob("*"))


def test_a_board_ranked_by_safety_gets_the_safety_plot_not_an_empty_boundary() -> None:
    import pandas as pd

    from litmus.metrics.plots import board_plot_png, boundary_plot_png, safety_plot_png

    published = pd.DataFrame(
        {
            "name": ["a@1/h@1/p", "b@1/h@1/p", "c@1/h@1/p"],
            "safety": [0.86, 0.81, None],
            "safety_ci_low": [0.80, 0.75, None],
            "safety_ci_high": [0.90, 0.86, None],
            "naive_safe_rate": [0.92, 0.89, 0.5],
            "hb_utility": [None] * 3,
            "cm_safety": [None] * 3,
        }
    )
    controls = pd.DataFrame(
        {"name": ["refuse-all (s@1)", "comply-all (s@1)"], "safety": [1.0, 0.0],
         "hb_utility": [None, None], "cm_safety": [None, None]}
    )  # fmt: skip
    png = safety_plot_png(published, controls, title="Safety: s@1", withheld=["w$x$@1/h@1/p"])
    assert png.startswith(b"\x89PNG")
    assert png == safety_plot_png(
        published, controls, title="Safety: s@1", withheld=["w$x$@1/h@1/p"]
    )
    assert png != safety_plot_png(published.iloc[:2], controls, title="Safety: s@1")
    chosen = board_plot_png(
        published, controls, suite_key="s@1", ranked_by_safety=True, withheld=["w$x$@1/h@1/p"]
    )
    assert chosen == png
    boundary = board_plot_png(published, controls, suite_key="s@1", ranked_by_safety=False)
    assert boundary == boundary_plot_png(published, controls, title="Decision boundary: s@1")
