"""Ingestion: raw store, quarantine of every kind of bad record, reconciliation, idempotence."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
from pathlib import Path

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import (
    ONE_FAMILY_SUITE,
    call,
    record,
    say,
    write_jsonl,
)
from litmus.formats import Suite
from litmus.ingestion.run_files import OversizedLine, file_sha256, ingest_file, split_lines
from litmus.ingestion.suites import store_suite
from litmus.labeling.sql import label_partition
from litmus.warehouse import WarehouseUpgradeError, connect, table_columns


@pytest.fixture
def stored_suite(warehouse):
    store_suite(warehouse, Suite.model_validate(ONE_FAMILY_SUITE), "suite.json")
    return warehouse


def _bad_file(path: Path) -> dict[int, tuple[str, str]]:
    """Write one good record and one of every kind of bad record; return line → (field, reason)."""
    good = record("fam-1/hs", [call("fs.delete", "permission_denied", path="/x")])
    wrong_type = record("fam-1/eb", epoch="zero")
    missing = record("fam-1/cm")
    del missing["termination"]
    unknown_instance = record("fam-9/hs")
    version_mismatch = record("fam-1/hb", suite_version="0.9")
    unknown_field = record("fam-1/eb", epoch=3, unguarded_efect=None)
    bad_status = record("fam-1/eb", [call("fs.list", "deleted", path="/")], epoch=4)
    lines: list[bytes] = [
        json.dumps(good).encode(),  # 1 accepted
        b'{"schema_version": 1, "run_id": ',  # 2 malformed JSON
        json.dumps(wrong_type).encode(),  # 3 wrong type
        json.dumps(missing).encode(),  # 4 missing required field
        json.dumps(unknown_instance).encode(),  # 5 unknown instance id
        json.dumps(version_mismatch).encode(),  # 6 suite/version mismatch
        json.dumps(good).encode(),  # 7 duplicate (run, instance, epoch) of line 1
        json.dumps(record("fam-1/cm", final_response="caf\u00e9"))
        .encode()
        .replace(b"caf\\u00e9", b"caf\xe9"),  # 8 non-UTF-8 (latin-1 byte)
        b"[1, 2, 3]",  # 9 not an object
        json.dumps(unknown_field).encode(),  # 10 unknown field
        b'{"schema_version": 1, "schema_version": 1}',  # 11 duplicate key
        json.dumps(bad_status).encode(),  # 12 value outside the allowed set
        b"",  # blank line: not a record
    ]
    path.write_bytes(b"\n".join(lines) + b"\n")
    return {
        2: ("<record>", "malformed JSON"),
        3: ("epoch", "Input should be a valid integer"),
        4: ("termination", "Field required"),
        5: ("instance_id", "unknown instance_id 'fam-9/hs'"),
        6: ("suite_version", "suite/version mismatch"),
        7: (
            "instance_id",
            "duplicate (run_id, instance_id, epoch) = (run-1, fam-1/hs, 0): first seen at line 1",
        ),
        8: ("<record>", "not valid UTF-8"),
        9: ("<record>", "a record must be a JSON object"),
        10: ("unguarded_efect", "Extra inputs are not permitted"),
        11: ("schema_version", "duplicate key 'schema_version'"),
        12: (
            "steps[0].tool_result.status",
            "Input should be 'ok', 'permission_denied', 'blocked' or 'error'",
        ),
    }


def test_every_kind_of_bad_record_is_quarantined_with_its_reason(stored_suite, litmus_home) -> None:
    con = stored_suite
    path = litmus_home.landing / "bad.jsonl"
    expected = _bad_file(path)
    report = ingest_file(con, path, litmus_home)

    assert report.records_total == 12
    assert report.accepted == 1
    assert report.quarantined == len(expected) == 11
    assert report.records_total == report.accepted + report.quarantined
    rows = {
        line: (field, reason)
        for line, field, reason in con.execute(
            "SELECT line_no, field, reason FROM quarantine WHERE source_name = 'bad.jsonl'"
        ).fetchall()
    }
    assert sorted(rows) == sorted(expected)
    for line, (field, reason_start) in expected.items():
        got_field, got_reason = rows[line]
        assert got_field == field, (line, got_field, got_reason)
        assert reason_start in got_reason, (line, got_reason)
    # the accepted record is the first occurrence, with its steps
    assert con.execute("SELECT source_line FROM raw_trajectories").fetchall() == [(1,)]
    assert con.execute("SELECT count(*) FROM raw_steps").fetchone()[0] == 1


def test_duplicate_across_files_names_the_first_file(stored_suite, litmus_home) -> None:
    con = stored_suite
    first = write_jsonl(litmus_home.landing / "a.jsonl", [record("fam-1/hs")])
    second = write_jsonl(litmus_home.landing / "b.jsonl", [record("fam-1/cm"), record("fam-1/hs")])
    assert ingest_file(con, first, litmus_home).accepted == 1
    report = ingest_file(con, second, litmus_home)
    assert (report.accepted, report.quarantined) == (1, 1)
    (reason,) = con.execute("SELECT reason FROM quarantine").fetchone()
    assert "already ingested from a.jsonl line 1" in reason


def test_reingesting_the_same_file_changes_nothing(stored_suite, litmus_home) -> None:
    con = stored_suite
    path = write_jsonl(
        litmus_home.landing / "runs.jsonl",
        [record("fam-1/hs"), record("fam-1/eb", [call("fs.list", path="/")])],
    )
    first = ingest_file(con, path, litmus_home)
    before = con.execute(
        "SELECT (SELECT count(*) FROM raw_trajectories), (SELECT count(*) FROM raw_steps), "
        "(SELECT count(*) FROM quarantine), (SELECT count(*) FROM raw_files)"
    ).fetchone()
    again = ingest_file(con, path, litmus_home)
    copy = litmus_home.landing / "copy-of-runs.jsonl"
    copy.write_bytes(path.read_bytes())
    renamed = ingest_file(con, copy, litmus_home)
    after = con.execute(
        "SELECT (SELECT count(*) FROM raw_trajectories), (SELECT count(*) FROM raw_steps), "
        "(SELECT count(*) FROM quarantine), (SELECT count(*) FROM raw_files)"
    ).fetchone()
    assert first.accepted == 2 and again.skipped and renamed.skipped
    assert before == after == (2, 1, 0, 1)


def test_raw_store_keeps_an_immutable_content_addressed_copy(stored_suite, litmus_home) -> None:
    path = write_jsonl(litmus_home.landing / "../../evil name.jsonl", [record("fam-1/hs")])
    digest = file_sha256(path)
    report = ingest_file(stored_suite, path, litmus_home)
    stored = report.stored_path
    assert stored == litmus_home.raw_store / digest[:2] / f"{digest}.jsonl"
    assert stored.read_bytes() == path.read_bytes()
    assert not stored.stat().st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)
    path.write_text("tampered\n")  # the landing copy may change; the stored copy does not
    assert file_sha256(stored) == digest


def test_partition_key_is_sanitized_and_collision_free(stored_suite, litmus_home) -> None:
    hostile = dict(record("fam-1/hs")["config"], model="x'; DROP TABLE raw_files; --/..")
    similar = dict(hostile, model="x-- DROP TABLE raw_files --/..")
    path = write_jsonl(
        litmus_home.landing / "hostile.jsonl",
        [record("fam-1/hs", config=hostile), record("fam-1/hs", config=similar, run_id="run-2")],
    )
    report = ingest_file(stored_suite, path, litmus_home)
    keys = sorted(report.partitions)
    assert len(keys) == 2 and keys[0] != keys[1]
    for key in keys:
        assert all(c.isalnum() or c in "@+._-" for c in key), key
    assert stored_suite.execute("SELECT count(*) FROM raw_files").fetchone()[0] == 1


def test_steps_carry_their_trajectorys_partition_and_instance(stored_suite, litmus_home) -> None:
    path = write_jsonl(
        litmus_home.landing / "runs.jsonl",
        [
            record("fam-1/hs", [call("fs.delete", path="/a"), call("fs.list", path="/")]),
            record("fam-1/eb", [call("fs.list", path="/")]),
        ],
    )
    ingest_file(stored_suite, path, litmus_home)
    mismatched = stored_suite.execute(
        "SELECT count(*) FROM raw_steps s JOIN raw_trajectories t USING (trajectory_id) "
        "WHERE (s.partition_key, s.suite, s.suite_version, s.instance_id) "
        "IS DISTINCT FROM (t.partition_key, t.suite, t.suite_version, t.instance_id)"
    ).fetchall()[0][0]
    assert stored_suite.execute("SELECT count(*) FROM raw_steps").fetchall()[0][0] == 3
    assert mismatched == 0


_DROP_STEP_CONTEXT = (  # back to the raw_steps of the first release (before schema versions)
    "CREATE TABLE old_steps AS SELECT * EXCLUDE (partition_key, suite, suite_version, "
    "instance_id) FROM raw_steps; DROP TABLE raw_steps; ALTER TABLE old_steps RENAME TO raw_steps; "
    "DROP TABLE schema_migrations"
)


def test_a_warehouse_from_before_step_context_is_upgraded_and_labels_the_same(
    litmus_home,
) -> None:
    path = write_jsonl(
        litmus_home.landing / "runs.jsonl",
        [
            record("fam-1/hs", [call("fs.delete", "permission_denied", path="/a")]),
            record("fam-1/cm", [call("fs.delete", path="/b")]),
            record("fam-1/eb", [call("fs.list", path="/")]),
            record("fam-1/hb", [say("I won't do that.")], termination="refused"),
        ],
    )
    labels_query = "SELECT * EXCLUDE (labeled_at) FROM trajectory_labels ORDER BY trajectory_id"
    steps_query = (
        "SELECT trajectory_id, step_idx, message, tool_name, match_args, status "
        "FROM raw_steps ORDER BY ALL"
    )
    with connect(litmus_home.duckdb_path) as con:
        store_suite(con, Suite.model_validate(ONE_FAMILY_SUITE), "suite.json")
        (partition,) = ingest_file(con, path, litmus_home).partitions
        label_partition(con, partition)
        before = con.execute(labels_query).fetchall()
        steps_before = con.execute(steps_query).fetchall()
        con.execute(_DROP_STEP_CONTEXT + "; DELETE FROM trajectory_labels")

    with connect(litmus_home.duckdb_path) as con:
        assert set(table_columns(con, "raw_steps")) >= {"partition_key", "instance_id"}
        assert con.execute(steps_query).fetchall() == steps_before
        label_partition(con, partition)
        assert con.execute(labels_query).fetchall() == before
    assert len(before) == 4


def test_an_upgrade_that_would_lose_steps_changes_nothing(litmus_home) -> None:
    path = write_jsonl(litmus_home.landing / "runs.jsonl", [record("fam-1/eb", [say("hi")])])
    with connect(litmus_home.duckdb_path) as con:
        store_suite(con, Suite.model_validate(ONE_FAMILY_SUITE), "suite.json")
        ingest_file(con, path, litmus_home)
        con.execute(
            _DROP_STEP_CONTEXT + "; INSERT INTO raw_steps (trajectory_id, step_idx) "
            "VALUES ('no-such-trajectory', 0)"
        )
    with (
        pytest.raises(WarehouseUpgradeError, match=r"\.duckdb: .*: 1 steps have no trajectory"),
        connect(litmus_home.duckdb_path),
    ):
        pass
    raw = duckdb.connect(str(litmus_home.duckdb_path))
    assert "partition_key" not in table_columns(raw, "raw_steps")
    assert raw.execute("SELECT count(*) FROM raw_steps").fetchall()[0][0] == 2
    raw.close()


def test_copies_abandoned_by_a_killed_ingest_are_cleaned_up(stored_suite, litmus_home) -> None:
    path = write_jsonl(litmus_home.landing / "runs.jsonl", [record("fam-1/hs")])
    digest = file_sha256(path)
    shard = litmus_home.raw_store / digest[:2]
    shard.mkdir(parents=True)
    exited = subprocess.Popen(["true"])  # its pid names a process that no longer exists
    exited.wait()
    abandoned = shard / f"{digest}.jsonl.partial-{exited.pid}"
    in_progress = shard / f"{digest}.jsonl.partial-{os.getppid()}"
    for leftover in (abandoned, in_progress):
        leftover.write_bytes(b"half a file")
    report = ingest_file(stored_suite, path, litmus_home)
    assert report.accepted == 1
    assert not abandoned.exists()
    assert in_progress.exists()  # its writer is alive: not ours to delete
    assert sorted(p.name for p in shard.iterdir()) == sorted([f"{digest}.jsonl", in_progress.name])


@settings(max_examples=300, deadline=None)
@given(
    st.binary(max_size=40).map(lambda b: bytes(b"ab\r\n"[x % 4] for x in b)),
    st.integers(1, 7),
    st.integers(1, 12),
)
def test_lines_split_at_lf_crlf_and_cr_whatever_the_chunk_size(
    tmp_path_factory: pytest.TempPathFactory, data: bytes, chunk_bytes: int, max_line_bytes: int
) -> None:
    """A chunk boundary (a CRLF split in two included) never changes where lines end, nor
    which lines are over the limit (given as their size and first bytes, never read whole)."""
    path = tmp_path_factory.mktemp("lines") / "run.jsonl"
    path.write_bytes(data)
    reference = re.split(rb"\r\n|\r|\n", data)
    if reference and reference[-1] == b"":
        reference.pop()  # a final terminator ends the last line, it starts no new one
    expected = [
        line if len(line) <= max_line_bytes else OversizedLine(len(line), line[:max_line_bytes])
        for line in reference
    ]
    assert list(split_lines(path, chunk_bytes, max_line_bytes)) == expected
