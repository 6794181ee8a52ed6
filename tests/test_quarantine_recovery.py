"""Quarantine you can work with (issue 15): list it, and records held back for a curable
reason (suite not loaded yet) go through once the suite is loaded — nothing lost, no
duplicates; unsupported and empty landed files are reported."""

from __future__ import annotations

import re

from conftest import ONE_FAMILY_SUITE, litmus, record, write_jsonl
from litmus.formats import Suite
from litmus.ingestion.run_files import (
    CURABLE_QUARANTINE_SQL,
    CURABLE_REASON_CODES,
    ReasonCode,
    ingest_file,
    retry_curable_quarantine,
)
from litmus.ingestion.suites import store_suite
from litmus.runs import not_ingested
from litmus.settings import LitmusPaths
from litmus.warehouse import connect
from litmus_dagster.cli import HELD_BACK_FOR_SUITE


def _counts(paths: LitmusPaths) -> tuple[int, int, int, list[tuple]]:
    with connect(paths.duckdb_path) as con:
        accepted = con.execute("SELECT count(*) FROM raw_trajectories").fetchall()[0][0]
        quarantined = con.execute("SELECT count(*) FROM quarantine").fetchall()[0][0]
        distinct = con.execute(
            "SELECT count(DISTINCT (run_id, instance_id, epoch)) FROM raw_trajectories"
        ).fetchall()[0][0]
        files = con.execute(
            "SELECT original_name, records_total, records_accepted, records_quarantined "
            "FROM raw_files ORDER BY 1"
        ).fetchall()
    return accepted, quarantined, distinct, files


def test_records_held_back_for_an_unknown_suite_go_through_once_it_is_loaded(
    litmus_home: LitmusPaths,
) -> None:
    ids = ["fam-1/hs", "fam-1/cm", "fam-1/eb", "fam-1/hb"]
    run = write_jsonl(
        litmus_home.landing / "early.jsonl",
        [record(i) for i in ids] + [{"not": "a record"}],  # the last line is bad for good
    )
    with connect(litmus_home.duckdb_path) as con:
        report = ingest_file(con, run, litmus_home)
        assert (report.accepted, report.quarantined) == (0, 5)
        assert retry_curable_quarantine(con, litmus_home) == []  # nothing cures them yet

    listed = litmus(litmus_home.home, "quarantine", "early.jsonl")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[0].split() == ["file", "line", "field", "reason"]
    assert [line.split()[:3] for line in lines[1:5]] == [
        ["early.jsonl", str(n), "suite"] for n in range(1, 5)
    ]
    assert "unknown suite 't-suite' (load it first)" in lines[1]
    assert f"[{HELD_BACK_FOR_SUITE}]" in lines[1]
    assert lines[5].split()[:2] == ["early.jsonl", "5"] and "held back" not in lines[5]

    with connect(litmus_home.duckdb_path) as con:
        store_suite(con, Suite.model_validate(ONE_FAMILY_SUITE), "suite.json")
        retried = retry_curable_quarantine(con, litmus_home)
        assert [(r.records_total, r.accepted, r.quarantined) for r in retried] == [(4, 4, 0)]
        assert retry_curable_quarantine(con, litmus_home) == []  # once, not every run
        # re-landing the same bytes changes nothing either
        assert ingest_file(con, run, litmus_home).skipped
    accepted, quarantined, distinct, files = _counts(litmus_home)
    assert (accepted, quarantined, distinct) == (4, 1, 4)
    assert files == [("early.jsonl", 5, 4, 1)]  # records in = accepted + quarantined


def test_a_retried_record_that_was_meanwhile_ingested_is_a_duplicate_not_a_second_row(
    litmus_home: LitmusPaths,
) -> None:
    early = write_jsonl(litmus_home.landing / "early.jsonl", [record("fam-1/hs")])
    with connect(litmus_home.duckdb_path) as con:
        ingest_file(con, early, litmus_home)
        store_suite(con, Suite.model_validate(ONE_FAMILY_SUITE), "suite.json")
        later = write_jsonl(
            litmus_home.landing / "later.jsonl", [record("fam-1/hs"), record("fam-1/cm")]
        )
        ingest_file(con, later, litmus_home)
        (retried,) = retry_curable_quarantine(con, litmus_home)
        assert (retried.accepted, retried.quarantined) == (0, 1)
        reason = con.execute("SELECT reason FROM quarantine").fetchall()[0][0]
    assert reason.startswith("duplicate (run_id, instance_id, epoch)")
    accepted, quarantined, distinct, _ = _counts(litmus_home)
    assert (accepted, quarantined, distinct) == (2, 1, 2)


def test_unsupported_and_empty_landed_files_are_reported(litmus_home: LitmusPaths) -> None:
    (litmus_home.landing / "notes.txt").write_text("hello")
    (litmus_home.landing / "empty.jsonl").write_bytes(b"")
    (litmus_home.landing / ".partial-upload.jsonl").write_text("{")  # hidden: left alone
    write_jsonl(litmus_home.landing / "ok.jsonl", [record("fam-1/hs")])
    problems = dict(not_ingested(litmus_home))
    assert set(problems) == {"notes.txt", "empty.jsonl"}
    assert problems["notes.txt"].startswith("unsupported file type")
    assert problems["empty.jsonl"] == "empty file: no records"
    status = litmus(litmus_home.home, "status")
    assert status.returncode == 0, status.stderr
    assert "not ingested: notes.txt: unsupported file type" in status.stdout
    assert "not ingested: empty.jsonl: empty file: no records" in status.stdout
    listed = litmus(litmus_home.home, "quarantine")
    assert "not ingested: notes.txt" in listed.stdout


def test_quarantine_of_a_file_it_does_not_know_is_one_line(litmus_home: LitmusPaths) -> None:
    result = litmus(litmus_home.home, "quarantine", "nope.jsonl")
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        "litmus: error: nope.jsonl: no quarantined record and not a landed file"
    ]


def test_each_quarantined_record_carries_its_reason_code(litmus_home: LitmusPaths) -> None:
    run = write_jsonl(
        litmus_home.landing / "mixed.jsonl",
        [
            record("fam-1/hs", suite="other-suite"),
            record("fam-1/cm", suite_version="2"),
            record("fam-9/hs"),
            {"not": "a record"},
            record("fam-1/eb"),
            record("fam-1/eb"),
        ],
    )
    with run.open("a") as lines:
        lines.write("{oops\n")
    with connect(litmus_home.duckdb_path) as con:
        store_suite(con, Suite.model_validate(ONE_FAMILY_SUITE), "suite.json")
        ingest_file(con, run, litmus_home)
        codes = con.execute("SELECT line_no, reason_code FROM quarantine ORDER BY 1").fetchall()
    assert codes == [
        (1, ReasonCode.UNKNOWN_SUITE),
        (2, ReasonCode.UNKNOWN_SUITE_VERSION),
        (3, ReasonCode.UNKNOWN_INSTANCE),
        (4, ReasonCode.INVALID),
        (6, ReasonCode.DUPLICATE),
        (7, ReasonCode.MALFORMED),
    ]
    assert set(re.findall(r"'(\w+)'", CURABLE_QUARANTINE_SQL)) == set(CURABLE_REASON_CODES)


def test_a_loaded_suite_cures_by_reason_code_whatever_the_wording(
    litmus_home: LitmusPaths,
) -> None:
    run = write_jsonl(
        litmus_home.landing / "early.jsonl",
        [record("fam-1/hs"), record("fam-1/cm"), {"not": "a record"}],
    )
    with connect(litmus_home.duckdb_path) as con:
        ingest_file(con, run, litmus_home)
        # the reasons reworded: the held-back records are still found by their code, and the
        # invalid record is not taken for one although its wording now says so
        con.execute("UPDATE quarantine SET reason = 'wird zurückgehalten' WHERE line_no < 3")
        con.execute(
            "UPDATE quarantine SET field = 'suite', reason = 'unknown suite ''t-suite'' "
            "(load it first)' WHERE line_no = 3"
        )
        store_suite(con, Suite.model_validate(ONE_FAMILY_SUITE), "suite.json")
        (retried,) = retry_curable_quarantine(con, litmus_home)
        assert (retried.records_total, retried.accepted, retried.quarantined) == (2, 2, 0)
        left = con.execute("SELECT line_no, reason_code FROM quarantine").fetchall()
    assert left == [(3, ReasonCode.INVALID)]
    listed = litmus(litmus_home.home, "quarantine", "early.jsonl")
    assert "held back" not in listed.stdout
