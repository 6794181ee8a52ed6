"""The lake backend (litmus/warehouse_lake.py) against a real PostgreSQL catalog and Parquet
data: the same schema as the embedded file, one migration at a time under the advisory lock,
write conflicts retried and logged, a writer killed mid-transaction leaving nothing, and the
board published from the lake identical to the embedded one on the same files."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
from crash_loop_world import (
    clean_home,
    clean_publication,
    litmus_run,
    published,
    sample_inputs,
    stage,
)
from lake_world import new_lake
from postgres_server import PostgresServer

from conftest import litmus
from litmus.warehouse import (
    DEFAULT_MEMORY_LIMIT,
    connect,
    connect_read_only,
    migrations,
    retry_on_conflict,
    transaction,
    without_keys,
)
from litmus.warehouse_lake import (
    LAKE_DATA_PATH_ENV,
    WAREHOUSE_ENV,
    LakeSettingError,
    extension_file,
    lake_from_environment,
)


@pytest.fixture
def lake(
    postgres: PostgresServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> dict[str, str]:
    env = new_lake(postgres, tmp_path)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return env


def shapes(con: duckdb.DuckDBPyConnection, catalog: str) -> dict[str, list[tuple[str, ...]]]:
    """Every table and view of ``catalog``: its columns' names, types and nullability."""
    rows = con.execute(
        "SELECT table_name, column_name, data_type, is_nullable FROM information_schema.columns "
        "WHERE table_catalog = ? AND table_schema = 'main' ORDER BY table_name, ordinal_position",
        [catalog],
    ).fetchall()
    found: dict[str, list[tuple[str, ...]]] = {}
    for table, *column in rows:
        found.setdefault(table, []).append(tuple(column))
    return found


def test_schema_files_without_keys_keep_every_table_column_and_constraint_but_keys():
    """The oracle of :func:`without_keys`: each prefix of the schema files, applied keyed and
    unkeyed to two scratch databases, gives the same tables and views, column for column."""
    with duckdb.connect() as keyed, duckdb.connect() as unkeyed:
        for migration in migrations():
            keyed.execute(migration.sql())
            unkeyed.execute(without_keys(migration.sql()))
            assert "PRIMARY KEY" not in without_keys(migration.sql()), migration.path.name
            assert shapes(unkeyed, "memory") == shapes(keyed, "memory"), migration.path.name
        keys = unkeyed.execute(
            "SELECT count(*) FROM duckdb_constraints() "
            "WHERE constraint_type IN ('PRIMARY KEY', 'UNIQUE')"
        ).fetchall()[0][0]
        assert keys == 0


def test_a_lake_setting_is_read_or_refused_by_name(monkeypatch, tmp_path):
    monkeypatch.delenv(WAREHOUSE_ENV, raising=False)
    assert lake_from_environment() is None  # the embedded default
    monkeypatch.setenv(WAREHOUSE_ENV, "embedded")
    assert lake_from_environment() is None
    monkeypatch.setenv(WAREHOUSE_ENV, "postgres://somewhere/lake")
    with pytest.raises(LakeSettingError, match="expected 'embedded' or 'ducklake:postgres:"):
        lake_from_environment()
    monkeypatch.setenv(WAREHOUSE_ENV, "ducklake:postgres:dbname=lake host=127.0.0.1")
    monkeypatch.delenv(LAKE_DATA_PATH_ENV, raising=False)
    with pytest.raises(LakeSettingError, match=f"{LAKE_DATA_PATH_ENV} is not set"):
        lake_from_environment()
    monkeypatch.setenv(LAKE_DATA_PATH_ENV, "relative/data")
    monkeypatch.chdir(tmp_path)
    lake = lake_from_environment()
    assert lake is not None and lake.catalog == "dbname=lake host=127.0.0.1"
    assert lake.data_path == str(tmp_path / "relative" / "data") + os.sep  # dbt moves cwd
    # every extension the lake loads is there, built for this DuckDB
    for name in ("ducklake", "postgres_scanner", "httpfs"):
        assert f"v{duckdb.__version__}" in str(extension_file(name))


def test_a_new_lake_holds_the_embedded_schema_applied_once(lake, tmp_path, monkeypatch):
    with connect(tmp_path / "lake.duckdb") as con:
        on_lake = shapes(con, "lake")
        # bounded as the embedded file's connections are, not DuckDB's 80 % of RAM
        limit = con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]
        with duckdb.connect() as plain:
            plain.execute(f"SET memory_limit = '{DEFAULT_MEMORY_LIMIT}'")
            assert limit == plain.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]
        versions = con.execute(
            "SELECT version, count(*) FROM schema_migrations GROUP BY 1 ORDER BY 1"
        ).fetchall()
    assert versions == [(m.version, 1) for m in migrations()]
    assert not (tmp_path / "lake.duckdb").exists()  # nothing went to an embedded file
    monkeypatch.delenv(WAREHOUSE_ENV)
    with connect(tmp_path / "embedded.duckdb") as con:
        embedded = shapes(con, "embedded")
    assert on_lake == embedded
    monkeypatch.setenv(WAREHOUSE_ENV, lake[WAREHOUSE_ENV])
    with connect_read_only(tmp_path / "lake.duckdb") as con:
        assert con.execute("SELECT count(*) FROM raw_trajectories").fetchall() == [(0,)]


def test_writers_opening_a_new_lake_at_once_apply_each_migration_once(lake, tmp_path):
    opener = "from litmus.warehouse import connect\nwith connect(__import__('sys').argv[1]): pass"
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", opener, str(tmp_path / f"w{i}.duckdb")],
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(3)
    ]
    for writer in writers:
        _, err = writer.communicate(timeout=300)
        assert writer.returncode == 0, err[-2000:]
    with connect_read_only(tmp_path / "any.duckdb") as con:
        versions = con.execute(
            "SELECT version, count(*) FROM schema_migrations GROUP BY 1 ORDER BY 1"
        ).fetchall()
    assert versions == [(m.version, 1) for m in migrations()]


def _replace_partition(con: duckdb.DuckDBPyConnection, key: str, value: int, rows: int) -> None:
    con.execute("DELETE FROM partition_rows WHERE partition_key = ?", [key])
    con.execute("INSERT INTO partition_rows SELECT ?, ?, range FROM range(?)", [key, value, rows])


def test_a_write_conflict_is_retried_logged_and_nothing_is_lost_or_doubled(lake, tmp_path, caplog):
    """Two writers replace their own configuration's rows of one table at the same time:
    the one committing second loses (DuckLake: "another transaction has deleted from it"),
    is retried, and both configurations end with exactly their new rows."""
    with connect(tmp_path / "a.duckdb") as first, connect(tmp_path / "b.duckdb") as second:
        first.execute(
            "CREATE TABLE partition_rows (partition_key VARCHAR, value INTEGER, n BIGINT)"
        )
        for key in ("cfg-a", "cfg-b"):
            _replace_partition(first, key, 0, 100)
        attempts: list[int] = []

        def second_writer() -> None:
            attempts.append(1)
            with transaction(second):
                _replace_partition(second, "cfg-b", 2, 100)
                if len(attempts) == 1:  # the other writer commits in the middle, once
                    with transaction(first):
                        _replace_partition(first, "cfg-a", 1, 100)

        with caplog.at_level(logging.WARNING, logger="litmus.warehouse"):
            retry_on_conflict(second_writer, what="cfg-b")
        assert len(attempts) == 2
        assert any("cfg-b: write conflict" in r.getMessage() for r in caplog.records)
        counts = first.execute(
            "SELECT partition_key, value, count(*), count(DISTINCT n) FROM partition_rows "
            "GROUP BY ALL ORDER BY 1"
        ).fetchall()
    assert counts == [("cfg-a", 1, 100, 100), ("cfg-b", 2, 100, 100)]


_WRITER = textwrap.dedent(
    """
    import sys, time
    from litmus.warehouse import connect, transaction
    home, hold = sys.argv[1], sys.argv[2] == "hold"
    with connect(home) as con:
        con.execute(
            "CREATE TABLE IF NOT EXISTS partition_rows "
            "(partition_key VARCHAR, value INTEGER, n BIGINT)"
        )
        with transaction(con):
            con.execute("DELETE FROM partition_rows WHERE partition_key = 'cfg-k'")
            con.execute("INSERT INTO partition_rows SELECT 'cfg-k', 1, range FROM range(200000)")
            print("written", flush=True)
            if hold:
                time.sleep(600)
    """
)


def test_a_writer_killed_mid_write_leaves_no_rows_and_its_rerun_commits(lake, tmp_path):
    killed = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(tmp_path / "w.duckdb"), "hold"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert killed.stdout is not None
        assert killed.stdout.readline().strip() == "written", killed.stderr
        os.kill(killed.pid, signal.SIGKILL)
    finally:
        killed.kill()
        killed.wait(timeout=60)
    with connect(tmp_path / "r.duckdb") as con:
        assert con.execute("SELECT count(*) FROM partition_rows").fetchall() == [(0,)]
    rerun = subprocess.run(
        [sys.executable, "-c", _WRITER, str(tmp_path / "w.duckdb"), "commit"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    with connect(tmp_path / "r.duckdb") as con:
        assert con.execute(
            "SELECT count(*), count(DISTINCT n) FROM partition_rows WHERE partition_key = 'cfg-k'"
        ).fetchall() == [(200000, 200000)]


# ------------------------------------------------------------ the whole pipeline on the lake


@pytest.fixture(scope="module")
def lake_publication(
    postgres: PostgresServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[dict[str, str], Path, tuple[int, int]]]:
    """The crash-loop's inputs scored on a new lake by `litmus run` killed (SIGKILL) right after
    its second run file's rows committed, then run again: its environment, its home, and
    (files, trajectories) the lake held after the kill."""
    root = tmp_path_factory.mktemp("lake-run")
    env = new_lake(postgres, root)
    with pytest.MonkeyPatch.context() as patch:
        for name, value in env.items():
            patch.setenv(name, value)
        paths = stage(root, "lake", *sample_inputs(root))
        killed = litmus_run(paths, crash_at="ingest.file_committed#2")
        assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
        with connect_read_only(paths.duckdb_path) as con:
            after_kill = con.execute(
                "SELECT count(DISTINCT source_file_hash), count(*) FROM raw_trajectories"
            ).fetchall()[0]
        done = litmus_run(paths)
        assert done.returncode == 0, done.stderr[-3000:]
    yield env, paths.home, after_kill


def test_a_run_killed_mid_ingestion_on_the_lake_left_whole_files_only(lake_publication):
    """The kill came right after the second file's commit: two files' rows, whole."""
    _, _, (files, trajectories) = lake_publication
    assert files == 2 and trajectories > 0


def test_the_board_published_from_the_lake_is_the_embedded_one(
    lake_publication, tmp_path_factory, monkeypatch
):
    """Same files, same board, though the lake's first run was killed mid-ingestion: the
    leaderboard CSV, Markdown, HTML and plot bytes, the receipt (rows, fingerprints, gates,
    the published files' digests) and the alerts."""
    embedded = clean_publication(tmp_path_factory)
    env, home, _ = lake_publication
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    from litmus.settings import litmus_paths

    paths = litmus_paths(home)
    assert not paths.duckdb_path.exists()  # everything went to the lake
    assert published(paths) == embedded


# ------------------------------------------------------------------ moving a team to the lake


def test_lake_import_copies_every_schema_table_of_an_embedded_warehouse(
    lake, tmp_path_factory, tmp_path, monkeypatch
):
    """`litmus lake-import` copies a scored embedded warehouse into a new lake row for row
    (dbt's tables are left for the next run), and refuses a lake that already holds rows."""
    with monkeypatch.context() as embedded:  # the shared world may be built here, embedded
        embedded.delenv(WAREHOUSE_ENV, raising=False)
        embedded.delenv(LAKE_DATA_PATH_ENV, raising=False)
        source = clean_home(tmp_path_factory).duckdb_path
    home = tmp_path / "team"
    done = litmus(home, "lake-import", "--from", str(source))
    assert done.returncode == 0, done.stderr[-2000:]
    assert "into the lake" in done.stderr
    with connect(tmp_path / "check.duckdb") as con:
        con.execute(f"ATTACH '{source}' AS source (READ_ONLY)")
        tables = [
            row[0]
            for row in con.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_catalog = 'lake' "
                "AND table_schema = 'main' AND table_type = 'BASE TABLE' "
                "AND table_name <> 'schema_migrations'"
            ).fetchall()
        ]
        assert "raw_trajectories" in tables
        copied = 0
        for table in tables:
            columns = ", ".join(f'"{name}"' for name, *_ in shapes(con, "lake")[table])
            lake_rows = f"SELECT {columns} FROM lake.main.{table}"
            source_rows = f"SELECT {columns} FROM source.main.{table}"
            differing = con.execute(
                f"SELECT count(*) FROM (({lake_rows}) EXCEPT ALL ({source_rows})) UNION ALL "
                f"SELECT count(*) FROM (({source_rows}) EXCEPT ALL ({lake_rows}))"
            ).fetchall()
            assert differing == [(0,), (0,)], table
            copied += con.execute(f"SELECT count(*) FROM lake.main.{table}").fetchall()[0][0]
        assert copied > 0
        con.execute("DETACH source")
    again = litmus(home, "lake-import", "--from", str(source))
    assert again.returncode == 1
    assert "copies into a new lake only" in again.stderr


_LABELER = textwrap.dedent(
    """
    import logging, sys
    from litmus.labeling.sql import label_partition
    from litmus.warehouse import connect
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    with connect(sys.argv[1]) as con:
        for _ in range(2):
            label_partition(con, sys.argv[2])
    """
)


def test_two_writers_labeling_different_configurations_both_commit(lake_publication, monkeypatch):
    """Two processes relabel two configurations of one lake at the same time, twice each:
    both succeed (a conflict is retried, and logged), and every trajectory of both keeps
    exactly one label."""
    env, home, _ = lake_publication
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with connect(home / "warehouse.duckdb") as con:
        keys = [
            row[0]
            for row in con.execute(
                "SELECT partition_key FROM raw_trajectories GROUP BY 1 ORDER BY count(*) DESC "
                "LIMIT 2"
            ).fetchall()
        ]
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", _LABELER, str(home / "warehouse.duckdb"), key],
            stderr=subprocess.PIPE,
            text=True,
        )
        for key in keys
    ]
    errors = [writer.communicate(timeout=600)[1] for writer in writers]
    for writer, err in zip(writers, errors, strict=True):
        assert writer.returncode == 0, err[-2000:]
    retries = [line for err in errors for line in err.splitlines() if "write conflict" in line]
    assert all("retrying" in line for line in retries)
    with connect_read_only(home / "warehouse.duckdb") as con:
        per_key = con.execute(
            "SELECT r.partition_key, count(*), count(l.trajectory_id), "
            "count(DISTINCT l.trajectory_id) FROM raw_trajectories r "
            "LEFT JOIN trajectory_labels l USING (trajectory_id) "
            "WHERE r.partition_key IN (?, ?) GROUP BY 1 ORDER BY 1",
            keys,
        ).fetchall()
    assert len(per_key) == 2
    for _, trajectories, labels, distinct in per_key:
        assert trajectories == labels == distinct


# ------------------------------------------- every write transaction retries a lost conflict


def _commit_once_in_the_middle(
    monkeypatch: pytest.MonkeyPatch, module: object, name: str, other_write
) -> list[int]:
    """Wrap ``module.name`` (called inside a write transaction) so that, the first time, the
    other writer commits ``other_write()`` before it goes on: the transaction then loses at
    its commit. Returns the list of calls (one entry per attempt)."""
    inner = getattr(module, name)
    calls: list[int] = []

    def wrapped(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            other_write()
        return inner(*args, **kwargs)

    monkeypatch.setattr(module, name, wrapped)
    return calls


def test_an_ingestion_and_a_publication_losing_a_write_conflict_are_retried(
    lake, tmp_path, monkeypatch, caplog
):
    """Every write goes through litmus.warehouse.atomically: a file's ingestion whose commit
    loses to another writer's change of a table it inserts into (DuckLake: "another
    transaction has deleted … from it"), and a publication's table replacement losing to
    another replacement, are rolled back, logged and run again, and store their rows once."""
    from litmus.ingestion import derivation
    from litmus.ingestion.run_files import ingest_file
    from litmus.ingestion.suites import store_suite_file
    from litmus.releases import drift
    from litmus.reuse import record_digests
    from litmus.sample import generate_sample
    from litmus.settings import litmus_paths
    from litmus.warehouse import atomically

    paths = litmus_paths(tmp_path / "home").ensure()
    manifest = generate_sample(tmp_path / "sample", n_families=1)
    first, second = sorted(manifest.run_paths.values())[:2]
    with connect(paths.duckdb_path) as con, connect(paths.duckdb_path) as other:
        store_suite_file(con, manifest.suite_path)
        stored = ingest_file(con, first, paths)

        def record_first_file_again() -> None:  # deletes and inserts raw_file_digests rows
            atomically(
                other,
                lambda: derivation.record_stored(other, stored.file_hash),
                what="the other writer",
            )

        calls = _commit_once_in_the_middle(
            monkeypatch, derivation, "record_staged", record_first_file_again
        )
        with caplog.at_level(logging.WARNING, logger="litmus.warehouse"):
            report = ingest_file(con, second, paths)
        assert len(calls) == 2  # lost once, then committed
        assert any(
            f"ingesting {report.source_name}: write conflict" in r.getMessage()
            for r in caplog.records
        )
        assert report.accepted > 0
        assert con.execute(
            "SELECT count(*), count(DISTINCT trajectory_id) FROM raw_trajectories "
            "WHERE source_file_hash = ?",
            [report.file_hash],
        ).fetchall() == [(report.accepted, report.accepted)]
        assert con.execute(
            "SELECT count(*) FROM raw_files WHERE file_hash = ?", [report.file_hash]
        ).fetchall() == [(1,)]
        digests = "SELECT count(*) FROM raw_file_digests WHERE file_hash = ? AND table_name = ?"
        for file_hash in (stored.file_hash, report.file_hash):
            assert con.execute(digests, [file_hash, "quarantine"]).fetchall() == [(1,)]

        # a publication step: release drift replaced while another writer replaces it too
        comparisons = drift.read_release_drift(con)
        drift.replace_release_drift(con, comparisons, {"pair": "before"})
        calls = _commit_once_in_the_middle(
            monkeypatch,
            drift,
            "record_digests",
            lambda: atomically(
                other,
                lambda: record_digests(other, "release_drift", {"pair": "other"}),
                what="the other writer",
            ),
        )
        with caplog.at_level(logging.WARNING, logger="litmus.warehouse"):
            drift.replace_release_drift(con, comparisons, {"pair": "digest"})
        assert len(calls) == 2
        assert any("release drift: write conflict" in r.getMessage() for r in caplog.records)
        assert con.execute(
            "SELECT partition_key, inputs_digest FROM result_inputs WHERE result = 'release_drift'"
        ).fetchall() == [("pair", "digest")]


def test_every_write_transaction_goes_through_atomically():
    """Only litmus.warehouse opens a write transaction (``atomically``, which retries a lost
    conflict); the lake module's advisory-lock transaction is on PostgreSQL, not the lake."""
    import ast

    project = Path(__file__).resolve().parents[1]
    owners = {project / "litmus" / "warehouse.py", project / "litmus" / "warehouse_lake.py"}
    found = []
    for path in sorted([*project.glob("litmus/**/*.py"), *project.glob("litmus_dagster/**/*.py")]):
        if path in owners:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            called = isinstance(node, ast.Call) and (
                getattr(node.func, "id", None) == "transaction"
                or getattr(node.func, "attr", None) == "transaction"
            )
            begins = (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and node.value.lstrip().upper().startswith(("BEGIN", "COMMIT"))
            )
            if called or begins:
                found.append(f"{path.relative_to(project)}:{node.lineno}")
    assert found == []


# ------------------------------------------------------------------------ lake maintenance


def _table_digests(con: duckdb.DuckDBPyConnection) -> dict[str, tuple[int, str]]:
    """Every lake table's row count and an order-free digest of its rows."""
    tables = [
        row[0]
        for row in con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_catalog = 'lake' "
            "AND table_schema = 'main' AND table_type = 'BASE TABLE' ORDER BY 1"
        ).fetchall()
    ]
    digests = {}
    for table in tables:
        name = '"' + table.replace('"', '""') + '"'
        digests[table] = con.execute(
            f"SELECT count(*), coalesce(bit_xor(hash(t)), 0)::VARCHAR FROM lake.main.{name} t"
        ).fetchall()[0]
    return digests


def test_lake_maintenance_drops_files_and_the_board_recomputes_identically(
    lake_publication, tmp_path_factory, monkeypatch
):
    """The maintenance job (compaction, snapshot expiry, clean-up) on the scored lake: fewer
    files, the same rows in every table, and a re-score from the compacted lake publishes
    the embedded board again. Last in the module: it rewrites the shared lake's files."""
    from dagster import DagsterInstance

    from litmus.labeling.sql import label_partition
    from litmus.lake_maintenance import lake_files, parquet_files
    from litmus.settings import litmus_paths
    from litmus_dagster.maintenance import maintain_lake_job

    env, home, _ = lake_publication
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    lake = lake_from_environment()
    assert lake is not None
    with connect(home / "warehouse.duckdb") as con:  # rows replaced: files superseded
        for (key,) in con.execute(
            "SELECT DISTINCT partition_key FROM raw_trajectories ORDER BY 1 LIMIT 2"
        ).fetchall():
            label_partition(con, key)
    with connect_read_only(home / "warehouse.duckdb") as con:
        rows_before, tracked_before = _table_digests(con), lake_files(con)
    on_disk_before = parquet_files(lake)
    with DagsterInstance.ephemeral() as instance:
        result = maintain_lake_job.execute_in_process(
            instance=instance,
            run_config={"ops": {"maintain_lake_files": {"config": {"keep_days": 0}}}},
        )
    assert result.success
    with connect_read_only(home / "warehouse.duckdb") as con:
        assert _table_digests(con) == rows_before
        tracked_after = lake_files(con)
    assert tracked_after.files < tracked_before.files
    assert tracked_after.snapshots < tracked_before.snapshots
    assert parquet_files(lake) < on_disk_before
    again = litmus(home, "lake-maintain", "--keep-days", "0", timeout=300)
    assert again.returncode == 0, again.stderr[-2000:]
    assert "lake files" in again.stderr
    paths = litmus_paths(home)
    rescored = litmus_run(paths, forked=False, argv=("run", "--rescore-all"))
    assert rescored.returncode == 0, rescored.stderr[-3000:]
    assert published(paths) == clean_publication(tmp_path_factory)
