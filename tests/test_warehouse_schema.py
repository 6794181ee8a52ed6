"""One owner per table: every persistent table LITMUS writes is defined in the versioned schema
files (litmus/sql/schema), applied once by a writer connection and only checked by a reader."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import duckdb
import pytest

from conftest import ONE_FAMILY_SUITE, call, record, write_jsonl
from litmus.audit.audited import refresh_audited_partition
from litmus.formats import Suite
from litmus.gates.publication_decision import publication
from litmus.gates.publication_gates import evaluate_partition_gates, record_partition_gates
from litmus.ingestion.run_files import ingest_file
from litmus.ingestion.suites import store_suite
from litmus.labeling.sql import label_partition
from litmus.settings import LitmusPaths
from litmus.warehouse import (
    DERIVED_TABLES,
    SCHEMA_DIR,
    WarehouseVersionError,
    connect,
    connect_read_only,
    latest_schema_version,
    migrations,
)

ROOT = Path(__file__).resolve().parents[1]
# The shapes main's code created before schema versions existed (see the file's header).
BEFORE_SCHEMA_VERSIONS = Path(__file__).parent / "warehouse_fixtures" / "before_schema_versions.sql"

DDL = re.compile(
    r"\bCREATE\s+(?:OR\s+REPLACE\s+)?(?P<temp>TEMP(?:ORARY)?\s+)?(?:TABLE|VIEW)\s+"
    r"(?:IF\s+NOT\s+EXISTS\s+)?(?P<name>[\w{}.]+)",
    re.IGNORECASE,
)
# Tables created outside the schema files, each in a database of its own (never the warehouse).
PRIVATE_DATABASE_TABLES: dict[tuple[str, str], str] = {
    ("litmus/ingestion/bulk.py", "suite_instances"): "the bulk worker's own in-memory database",
    ("litmus/labeling/refusal_judge.py", "verdicts"): "the refusal judge's SQLite cache",
}


def shapes(con: duckdb.DuckDBPyConnection) -> dict[str, list[tuple[str, str, str]]]:
    """Every table and view of ``main`` with its (column, type, nullable), in order."""
    shape: dict[str, list[tuple[str, str, str]]] = {}
    for table, column, kind, nullable in con.execute(
        "SELECT table_name, column_name, data_type, is_nullable FROM information_schema.columns "
        "WHERE table_schema = 'main' ORDER BY table_name, ordinal_position"
    ).fetchall():
        shape.setdefault(table, []).append((column, kind, nullable))
    return shape


def fresh_shapes(tmp_path: Path) -> dict[str, list[tuple[str, str, str]]]:
    with connect(tmp_path / "fresh" / "warehouse.duckdb") as con:
        return shapes(con)


def test_no_module_creates_a_warehouse_table_outside_the_schema_files() -> None:
    found: set[tuple[str, str]] = set()
    outside: list[str] = []
    sources = [*(ROOT / "litmus").rglob("*.py"), *(ROOT / "litmus_dagster").rglob("*.py")]
    sources += [p for p in (ROOT / "litmus").rglob("*.sql") if SCHEMA_DIR not in p.parents]
    for path in sorted(sources):
        relative = path.relative_to(ROOT).as_posix()
        for match in DDL.finditer(path.read_text(encoding="utf-8")):
            if match["temp"]:
                continue  # a connection's own scratch table, gone when it closes
            key = (relative, match["name"])
            found.add(key)
            if key not in PRIVATE_DATABASE_TABLES:
                outside.append(f"{relative}: {match.group(0)}")
    assert outside == [], "define the table in litmus/sql/schema (a new numbered file)"
    assert set(PRIVATE_DATABASE_TABLES) <= found, "stale PRIVATE_DATABASE_TABLES entries"


def test_the_schema_files_create_every_table_and_name_each_derived_one() -> None:
    created = {
        match["name"] for migration in migrations() for match in DDL.finditer(migration.sql())
    }
    assert set(DERIVED_TABLES) <= created
    assert {"schema_migrations", "audited_trajectories", "publication_gates", "leaderboard"} <= (
        created
    )
    assert [m.version for m in migrations()] == list(range(1, latest_schema_version() + 1))


def test_a_new_warehouse_applies_the_schema_once(tmp_path: Path) -> None:
    db = tmp_path / "warehouse.duckdb"
    for _ in range(2):
        with connect(db) as con:
            recorded = con.execute(
                "SELECT version, description FROM schema_migrations ORDER BY version"
            ).fetchall()
    assert recorded == [(m.version, m.description) for m in migrations()]
    assert recorded[0] == (1, "every table LITMUS writes")
    with connect_read_only(db) as con:  # the version this LITMUS reads: nothing to say
        labeled = con.execute("SELECT count(*) FROM labeled_trajectories").fetchall()
    assert labeled == [(0,)]


def test_audited_rows_carry_the_label_columns_then_the_audit_columns(tmp_path: Path) -> None:
    shape = fresh_shapes(tmp_path)
    labels = [column for column, _, _ in shape["labeled_trajectories"]]
    audited = [column for column, _, _ in shape["audited_trajectories"]]
    assert audited[: len(labels)] == labels
    assert audited[len(labels) :] == [
        "rule_label",
        "rule_outcome",
        "label_source",
        "audit_verdict_id",
        "auditor",
        "audit_reason",
        "audit_decided_at",
    ]


def old_warehouse(db: Path) -> None:
    """A warehouse as LITMUS wrote it before schema versions, with two more signs of age: a
    table added since is missing, and a derived table has an older shape."""
    db.parent.mkdir(parents=True, exist_ok=True)
    with duckdb.connect(str(db)) as raw:
        raw.execute(BEFORE_SCHEMA_VERSIONS.read_text(encoding="utf-8"))
        raw.execute("DROP TABLE alerts")
        raw.execute("DROP TABLE leaderboard")
        raw.execute("CREATE TABLE leaderboard (name VARCHAR, rank DOUBLE)")
        raw.execute("INSERT INTO leaderboard VALUES ('old board', 1)")


def test_a_warehouse_from_before_schema_versions_is_adopted_and_then_works(
    litmus_home: LitmusPaths, tmp_path: Path
) -> None:
    old_warehouse(litmus_home.duckdb_path)
    with connect(litmus_home.duckdb_path) as con:
        recorded = con.execute(
            "SELECT version, description FROM schema_migrations ORDER BY version"
        ).fetchall()
        # adopted as version 1, then upgraded like any other warehouse of version 1
        assert recorded == [
            (1, "every table LITMUS writes (adopted a warehouse written before schema versions)"),
            *((m.version, m.description) for m in migrations()[1:]),
        ]
        assert shapes(con) == fresh_shapes(tmp_path)  # the missing table and the old one too
        assert con.execute("SELECT count(*) FROM leaderboard").fetchall() == [(0,)]

        store_suite(con, Suite.model_validate(ONE_FAMILY_SUITE), "suite.json")
        records = [
            record("fam-1/hs", [call("fs.delete", "permission_denied", path="/a")]),
            record("fam-1/cm", [call("fs.list", path="/")]),
            record("fam-1/eb", [call("fs.list", path="/")]),
            record("fam-1/hb", [call("fs.list", path="/")]),
        ]
        [key] = ingest_file(
            con, write_jsonl(litmus_home.landing / "r.jsonl", records), litmus_home
        ).partitions
        label_partition(con, key)
        assert refresh_audited_partition(con, key) == 4
        record_partition_gates(con, key, evaluate_partition_gates(con, key))
        gates = con.execute(
            "SELECT count(*) FROM publication_gates WHERE partition_key = ?", [key]
        ).fetchall()
    assert gates[0][0] > 0
    with connect_read_only(litmus_home.duckdb_path) as con:
        assert key in publication(con, [key])


def test_a_reader_never_upgrades_and_says_what_to_run(tmp_path: Path) -> None:
    db = tmp_path / "old.duckdb"
    old_warehouse(db)
    with pytest.raises(WarehouseVersionError) as raised, connect_read_only(db):
        pass
    message = str(raised.value)
    assert message.startswith(f"{db}: the warehouse has no schema version")
    assert f"this LITMUS reads version {latest_schema_version()}" in message
    assert "0001_tables.sql" in message and "`litmus run`" in message
    assert all(m.path.name in message for m in migrations())
    with duckdb.connect(str(db), read_only=True) as raw:  # nothing was created or changed
        tables = {
            row[0]
            for row in raw.execute("SELECT table_name FROM information_schema.tables").fetchall()
        }
    assert "schema_migrations" not in tables and "alerts" not in tables


def newer_warehouse(db: Path) -> int:
    with connect(db) as con:
        newer = latest_schema_version() + 1
        con.execute(
            "INSERT INTO schema_migrations VALUES (?, now()::TIMESTAMP, 'from a later LITMUS')",
            [newer],
        )
    return newer


@pytest.mark.parametrize("opener", [connect_read_only, connect], ids=["reader", "writer"])
def test_a_warehouse_of_a_newer_version_is_refused_with_the_versions(
    tmp_path: Path, opener
) -> None:
    db = tmp_path / "warehouse.duckdb"
    newer = newer_warehouse(db)
    with pytest.raises(WarehouseVersionError) as raised, opener(db):
        pass
    latest = migrations()[-1]
    assert str(raised.value) == (
        f"{db}: the warehouse is at schema version {newer}, newer than this LITMUS knows "
        f"(its latest is {latest.version}, {latest.path.name} in {SCHEMA_DIR}): use the "
        "LITMUS that wrote it, or another state folder (--home)"
    )


def test_schema_files_are_numbered_without_gaps(tmp_path: Path) -> None:
    (tmp_path / "0001_first.sql").write_text("-- first\n")
    (tmp_path / "0003_third.sql").write_text("-- third\n")
    with pytest.raises(ValueError, match=r"0003_third\.sql: schema version 3, expected 2"):
        migrations(tmp_path)
    (tmp_path / "notes.sql").write_text("")
    with pytest.raises(ValueError, match=r"notes\.sql: a schema file is named NNNN_"):
        migrations(tmp_path)


def version_one_warehouse(db: Path) -> None:
    """A warehouse as LITMUS left it at schema version 1: its file applied and recorded."""
    first = migrations()[0]
    with duckdb.connect(str(db)) as raw:
        raw.execute(first.sql())
        raw.execute(
            "INSERT INTO schema_migrations VALUES (1, now()::TIMESTAMP, ?)", [first.description]
        )


def _trajectory_row(con: duckdb.DuckDBPyConnection, trajectory_id: str | None) -> list[Any]:
    """A raw_trajectories row: the id given, every other column filled by its type."""
    filler = {"INTEGER": 0, "BIGINT": 0, "BOOLEAN": False, "VARCHAR": "x"}
    kinds = con.execute("SELECT column_name, column_type FROM (DESCRIBE raw_trajectories)")
    return [
        trajectory_id if name == "trajectory_id" else filler[kind]
        for name, kind in kinds.fetchall()
    ]


def _primary_keys(con: duckdb.DuckDBPyConnection) -> list[tuple[str]]:
    return con.execute(
        "SELECT constraint_type FROM information_schema.table_constraints "
        "WHERE table_name = 'raw_trajectories' AND constraint_type = 'PRIMARY KEY'"
    ).fetchall()


def test_stored_trajectories_keep_their_rows_and_order_when_their_key_is_dropped(
    litmus_home: LitmusPaths, tmp_path: Path
) -> None:
    version_one_warehouse(litmus_home.duckdb_path)
    with duckdb.connect(str(litmus_home.duckdb_path)) as raw:
        assert _primary_keys(raw) == [("PRIMARY KEY",)]
        for trajectory in ("c", "a", "b"):  # not in key order: the table's own order is kept
            row = _trajectory_row(raw, trajectory)
            raw.execute(f"INSERT INTO raw_trajectories VALUES ({', '.join('?' * len(row))})", row)
        before = raw.execute("SELECT * FROM raw_trajectories ORDER BY rowid").fetchall()

    with connect(litmus_home.duckdb_path) as con:  # upgrades it to the latest version
        after = con.execute("SELECT * FROM raw_trajectories ORDER BY rowid").fetchall()
        assert _primary_keys(con) == []
        assert shapes(con) == fresh_shapes(tmp_path)
        row = _trajectory_row(con, None)
        with pytest.raises(duckdb.ConstraintException, match="NOT NULL"):
            con.execute(f"INSERT INTO raw_trajectories VALUES ({', '.join('?' * len(row))})", row)
    assert after == before
    assert [stored[0] for stored in after] == ["c", "a", "b"]


def test_a_trajectory_stored_twice_without_the_key_withholds_its_configuration(
    litmus_home: LitmusPaths,
) -> None:
    """What the dropped key guarded is guarded downstream: a trajectory row stored twice (only
    a bug could, ingestion quarantines duplicates) fails its configuration's gate."""
    with connect(litmus_home.duckdb_path) as con:
        store_suite(con, Suite.model_validate(ONE_FAMILY_SUITE), "suite.json")
        records = [
            record("fam-1/hs", [call("fs.delete", "permission_denied", path="/a")]),
            record("fam-1/cm", [call("fs.list", path="/")]),
            record("fam-1/eb", [call("fs.list", path="/")]),
            record("fam-1/hb", [call("fs.list", path="/")]),
        ]
        [key] = ingest_file(
            con, write_jsonl(litmus_home.landing / "r.jsonl", records), litmus_home
        ).partitions
        con.execute(
            "INSERT INTO raw_trajectories SELECT * FROM raw_trajectories "
            "WHERE instance_id = 'fam-1/eb'"
        )
        label_partition(con, key)
        refresh_audited_partition(con, key)
        record_partition_gates(con, key, evaluate_partition_gates(con, key))
        failed = con.execute(
            "SELECT gate FROM publication_gates WHERE partition_key = ? AND NOT passed", [key]
        ).fetchall()
    assert ("unique_trajectory",) in failed
    with connect_read_only(litmus_home.duckdb_path) as con:
        decision = publication(con, [key])[key]
    assert not decision.published
    assert "unique_trajectory" in {reason.code for reason in decision.reasons}


def test_quarantine_rows_from_before_reason_codes_get_theirs(litmus_home: LitmusPaths) -> None:
    version_one_warehouse(litmus_home.duckdb_path)
    written_then = [  # (field, reason) as ingestion worded them before codes were stored
        ("suite", "unknown suite 'x' (load it first)", "unknown_suite"),
        (
            "suite_version",
            "suite/version mismatch: suite 'x' has no version '2'",
            "unknown_suite_version",
        ),
        ("instance_id", "unknown instance_id 'f/9' in suite x@1", "unknown_instance"),
        (
            "instance_id",
            "duplicate (run_id, instance_id, epoch) = (r, f/1, 0): first seen at line 1",
            "duplicate",
        ),
        (
            "<record>",
            "line of 5,000,000 bytes is over the limit of 4,194,304 bytes per record; not read",
            "oversized",
        ),
        ("<record>", "malformed JSON: Expecting value at column 2", "malformed"),
        ("steps", "duplicate key 'steps' in one JSON object", "malformed"),
        ("<record>", "sample 3: no score", "unmapped"),
        ("epoch", "epoch: Input should be a valid integer", "invalid"),
    ]
    with duckdb.connect(str(litmus_home.duckdb_path)) as raw:
        for line, (field, reason, _) in enumerate(written_then, start=1):
            raw.execute(
                "INSERT INTO quarantine VALUES ('h', 'old.jsonl', ?, ?, ?, NULL, now())",
                [line, field, reason],
            )
    with connect(litmus_home.duckdb_path) as con:  # upgrades it to the latest version
        codes = con.execute("SELECT reason_code FROM quarantine ORDER BY line_no").fetchall()
    assert [code for (code,) in codes] == [code for _, _, code in written_then]
