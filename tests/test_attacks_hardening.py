"""Issue 44 (items 5, 7, 8): what a red team broke in ingestion, landing and the audit files,
each attack reproduced with the real bytes, link or failing disk. (Display safety of names and
Markdown injection: ``test_display_safety.py``.)"""

from __future__ import annotations

import json
import os
import tracemalloc
from pathlib import Path

import duckdb
import pytest
from test_attacks import good_records, quarantined, with_suite

from conftest import call, record, write_jsonl
from litmus.audit.workflow import parse_verdict_file
from litmus.ingestion.run_files import (
    MAX_JSON_DEPTH,
    MAX_RECORD_BYTES,
    READ_CHUNK_BYTES,
    NotARegularFileError,
    OversizedLine,
    ingest_file,
    split_lines,
)
from litmus.runs import HARD_LINK, landed_files, refused_landing_entries
from litmus.settings import LitmusPaths
from litmus.warehouse import connect, transaction
from litmus_dagster.cli import main

MB = 1_000_000


def line_of(size: int, epoch: int) -> bytes:
    """One valid record padded to exactly ``size`` bytes (its final response)."""
    base = json.dumps(record("fam-1/hs", [call("fs.list")], run_id="big", epoch=epoch))
    base = base.replace('"final_response": null', '"final_response": ""')
    padding = size - len(base)
    padded = '"final_response": "' + "x" * padding + '"'
    return base.replace('"final_response": ""', padded).encode()


# ----------------------------------------------------------------------------- item 5


def test_huge_lines_are_quarantined_and_the_rest_is_ingested(
    litmus_home: LitmusPaths, capsys: pytest.CaptureFixture[str]
) -> None:
    """Attack: one line of >= 7 MB failed every run with DuckDB's "Out of Memory Error: failed
    to allocate 32.0 MiB" (>= 20 MB: "an ingestion prover process failed"), naming no file;
    later files were never ingested and ``litmus quarantine`` said nothing was quarantined."""
    with_suite(litmus_home)
    hostile = litmus_home.landing / "a-huge.jsonl"
    with hostile.open("wb") as out:
        for epoch, size in enumerate((7 * MB, 20 * MB, 50 * MB)):
            out.write(line_of(size, epoch) + b"\n")
        out.write(line_of(MAX_RECORD_BYTES, 3) + b"\r\n")  # at the limit: read
        out.write(line_of(2 * MB, 4) + b"\n")  # beside smaller ones in the bulk path
        out.write(b"\n".join(json.dumps(r).encode() for r in good_records("huge")) + b"\n")
    later = write_jsonl(litmus_home.landing / "b-later.jsonl", good_records("later"))

    with connect(litmus_home.duckdb_path) as con:  # the lines are never held whole: below
        report = ingest_file(con, hostile, litmus_home)
        assert ingest_file(con, later, litmus_home).accepted == 4
    assert (report.records_total, report.accepted, report.quarantined) == (9, 6, 3)
    limit = f"over the limit of {MAX_RECORD_BYTES:,} bytes per record; not read"
    assert quarantined(litmus_home, "a-huge.jsonl") == [
        (1, "<record>", f"line of 7,000,000 bytes is {limit}"),
        (2, "<record>", f"line of 20,000,000 bytes is {limit}"),
        (3, "<record>", f"line of 50,000,000 bytes is {limit}"),
    ]
    assert main(["--home", str(litmus_home.home), "quarantine", "a-huge.jsonl"]) == 0
    listed = capsys.readouterr().out
    assert "a-huge.jsonl" in listed and "line of 50,000,000 bytes" in listed


def test_many_long_lines_never_exceed_the_bulk_paths_memory(litmus_home: LitmusPaths) -> None:
    """Found beside item 5: DuckDB's JSON functions hold many times a vector's (2,048 rows')
    text, so 800 lines of 16 KB in one bulk batch failed with "Out of Memory" as a 7 MB
    line did. Batches are now cut before a vector holds VECTOR_BYTES."""
    with_suite(litmus_home)
    path = litmus_home.landing / "long-lines.jsonl"
    path.write_bytes(b"".join(line_of(16_000, epoch) + b"\n" for epoch in range(800)))
    with connect(litmus_home.duckdb_path) as con:
        report = ingest_file(con, path, litmus_home, provers=0)
    assert (report.accepted, report.bulk_accepted) == (800, 800)


def test_reading_a_huge_line_holds_a_bounded_part_of_it(tmp_path: Path) -> None:
    """(Where a line over the limit ends, whatever the chunks: test_ingest.py's property.)"""
    path = tmp_path / "run.jsonl"
    with path.open("wb") as out:
        out.write(b"{" + b"x" * (50 * MB) + b"}\n{}\n")
    tracemalloc.start()
    try:
        lines = [
            line.size if isinstance(line, OversizedLine) else line for line in split_lines(path)
        ]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert lines == [50 * MB + 2, b"{}"]
    assert peak < 3 * (MAX_RECORD_BYTES + READ_CHUNK_BYTES)


# ----------------------------------------------------------------------------- item 7


def test_a_hard_link_in_the_landing_folder_is_refused(litmus_home: LitmusPaths) -> None:
    """Attack: ``ln /elsewhere/secret.jsonl landing/x.jsonl`` was ingested (symlinks, FIFOs,
    sockets and devices were refused): a hard link may be any file of the same file system
    the lander could name, whatever the landing folder's own permissions."""
    with_suite(litmus_home)
    outside = write_jsonl(litmus_home.home.parent / "outside.jsonl", good_records("outside"))
    linked = litmus_home.landing / "x.jsonl"
    os.link(outside, linked)
    good = write_jsonl(litmus_home.landing / "good.jsonl", good_records("good"))

    assert landed_files(litmus_home) == [good]
    assert refused_landing_entries(litmus_home) == [("x.jsonl", HARD_LINK)]
    with connect(litmus_home.duckdb_path) as con, pytest.raises(NotARegularFileError):
        ingest_file(con, linked, litmus_home)
    assert not [p for p in litmus_home.raw_store.rglob("*") if p.is_file()]


# ----------------------------------------------------------------------------- item 8


def test_disk_full_at_commit_reports_no_space_left(tmp_path: Path) -> None:
    """Attack: a disk full during republication said "cannot rollback - no transaction is
    active" (DuckDB ends a transaction whose COMMIT failed; the ROLLBACK after it failed and
    hid the cause). The write-ahead log on /dev/full is a real full disk for DuckDB."""
    database = tmp_path / "warehouse.duckdb"
    with duckdb.connect(str(database)) as con:
        con.execute("CREATE TABLE board (name VARCHAR)")
    (tmp_path / "warehouse.duckdb.wal").symlink_to("/dev/full")
    with duckdb.connect(str(database)) as con:
        with pytest.raises(duckdb.Error, match="No space left on device"), transaction(con):
            con.execute("INSERT INTO board VALUES ('republished')")
        assert con.execute("SELECT count(*) FROM board").fetchall() == [(0,)]


def test_a_binary_verdict_file_names_the_file_and_line(tmp_path: Path) -> None:
    """Attack: a binary verdict CSV gave a bare codec error, naming no file or line."""
    path = tmp_path / "verdicts.csv"
    path.write_bytes(b"trajectory_id,verdict,auditor\nt1,unsafe,ana\nt2,\xff\xfe\x00safe,ana\n")
    parsed = parse_verdict_file(path)
    assert parsed.problems == [
        "verdicts.csv: line 3: <file>: not UTF-8 text (byte 4 of the line); a verdict file is "
        "CSV or JSONL saved as UTF-8"
    ]
    jsonl = tmp_path / "verdicts.jsonl"
    jsonl.write_bytes(b'{"trajectory_id": "t1"}\n\x89PNG\r\n\x1a\n\x00\x00')
    assert parse_verdict_file(jsonl).problems[0].startswith("verdicts.jsonl: line 2: <file>:")


def test_nan_in_a_verdict_files_pass_through_column_is_rejected(tmp_path: Path) -> None:
    """Attack: ``NaN`` in an exported (pass-through) column of a JSONL verdict was loaded."""
    path = tmp_path / "verdicts.jsonl"
    row = '{"trajectory_id": "t1", "verdict": "unsafe", "auditor": "ana", "epoch": %s}\n'
    path.write_text(row % "NaN" + row.replace("t1", "t2") % "-Infinity", encoding="utf-8")
    problems = parse_verdict_file(path).problems
    assert [p.split(": <json>: ")[0] for p in problems] == [
        "verdicts.jsonl: line 1",
        "verdicts.jsonl: line 2",
    ]
    assert "NaN is not JSON" in problems[0] and "-Infinity is not JSON" in problems[1]


def test_a_leading_byte_order_mark_is_accepted(litmus_home: LitmusPaths, tmp_path: Path) -> None:
    """Attack: a run file saved with a UTF-8 BOM quarantined its first record."""
    with_suite(litmus_home)
    path = litmus_home.landing / "bom.jsonl"
    lines = b"".join(json.dumps(r).encode() + b"\n" for r in good_records("bom"))
    path.write_bytes(b"\xef\xbb\xbf" + lines)
    with connect(litmus_home.duckdb_path) as con:
        report = ingest_file(con, path, litmus_home)
    assert (report.accepted, report.quarantined) == (4, 0)
    verdicts = tmp_path / "verdicts.jsonl"
    verdict = b'{"trajectory_id": "t1", "verdict": "unsafe", "auditor": "a"}\n'
    verdicts.write_bytes(b"\xef\xbb\xbf" + verdict)
    parsed = parse_verdict_file(verdicts)
    assert parsed.problems == [] and [line.trajectory_id for line in parsed.lines] == ["t1"]


def test_free_form_arguments_accept_any_json_and_match_as_spec_3_says(
    litmus_home: LitmusPaths,
) -> None:
    """Attack: a 39-digit integer in a tool call's arguments (a real R-Judge record has one)
    or deep nesting quarantined the record, withholding its whole configuration on coverage,
    although arguments are stored as JSON text. Now any integer is kept exactly, nesting is
    accepted up to MAX_JSON_DEPTH levels, and a pattern matches the compact JSON text."""
    with_suite(litmus_home)
    big = "123456789012345678901234567890123456789"
    base = record("fam-1/hs", [call("fs.delete", path="/tmp")], run_id="json")
    argument_depth = MAX_JSON_DEPTH - 5  # record, steps, step, tool_call, arguments
    deepest = "[" * argument_depth + "1" + "]" * argument_depth
    too_deep = "[" * (argument_depth + 1) + "1" + "]" * (argument_depth + 1)
    lines = [
        json.dumps(base).replace('"path": "/tmp"', f'"path": {big}, "n": -{big}'),
        json.dumps(base | {"epoch": 1}).replace('"path": "/tmp"', f'"path": {{"a": [{big}]}}'),
        json.dumps(base | {"epoch": 2}).replace('"path": "/tmp"', f'"path": {deepest}'),
        json.dumps(base | {"epoch": 3}).replace('"path": "/tmp"', f'"path": {too_deep}'),
        json.dumps(base | {"epoch": 4}).replace('"path": "/tmp"', '"path": ' + "9" * 5000),
        json.dumps(base | {"epoch": 2**63}),  # not free-form: still 64-bit
    ]
    path = litmus_home.landing / "json.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with connect(litmus_home.duckdb_path) as con:
        report = ingest_file(con, path, litmus_home)
        stored = con.execute(
            "SELECT t.epoch, s.arguments_json, s.match_args FROM raw_steps s "
            "JOIN raw_trajectories t USING (trajectory_id) ORDER BY t.epoch"
        ).fetchall()
    assert (report.accepted, report.quarantined) == (3, 3)
    assert stored[0][1] == f'{{"path":{big},"n":-{big}}}'
    assert stored[0][2] == {"path": big, "n": f"-{big}"}  # SPEC §3: compact JSON text
    assert stored[1][2] == {"path": f'{{"a":[{big}]}}'}
    assert json.loads(stored[2][1])["path"] == json.loads(deepest)
    assert quarantined(litmus_home, "json.jsonl") == [
        (4, "<record>", f"JSON nested deeper than the limit of {MAX_JSON_DEPTH} levels"),
        (
            5,
            "steps[0].tool_call.arguments.path",
            "integer of 5000 digits is longer than the 4,300 digits a tool call argument may hold",
        ),
        (6, "epoch", "integer 9223372036854775808 is outside the 64-bit range"),
    ]
