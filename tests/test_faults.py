"""Faults (SPEC §10): ingestion killed with SIGKILL part-way and re-run loses and duplicates
nothing; processes started at once against one DuckDB file all finish (one waits), with no
lock error surfaced and no corrupted file.

Two whole ``litmus run`` processes started at once are the fixture of ``test_receipts.py``
(their shared result is what the receipt tests verify and tamper with)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from litmus.ingestion.run_files import file_sha256, ingest_file
from litmus.ingestion.suites import load_suite_file, store_suite
from litmus.sample import generate_sample
from litmus.settings import LitmusPaths, litmus_paths
from litmus.warehouse import connect, wal_path

RUNS_IN_BIG_FILE = 4
FAMILIES = 1_000  # 4 records per family and run: a 16,000-record file
# Ingestion prints progress every 10,000 records; the file has well over that many.
INGEST_SCRIPT = """
import sys
from pathlib import Path
from litmus.ingestion.run_files import ingest_file
from litmus.settings import litmus_paths
from litmus.warehouse import connect

paths = litmus_paths(sys.argv[1])
with connect(paths.duckdb_path) as con:
    for name in sys.argv[2:]:
        report = ingest_file(con, Path(name), paths, progress=lambda n: print(n, flush=True))
        print(report.summary(), flush=True)
"""
LOCK_ERROR_WORDS = ("Conflicting lock", "Could not set lock", "database is locked", "IO Error")


@dataclass(frozen=True)
class BigFile:
    suite: Path
    path: Path
    records: int
    steps: int


@pytest.fixture(scope="module")
def big_file(tmp_path_factory: pytest.TempPathFactory) -> BigFile:
    root = tmp_path_factory.mktemp("faults")
    manifest = generate_sample(root / "sample", n_families=FAMILIES)
    big = root / "big.jsonl"
    with big.open("wb") as out:
        for run_path in sorted(manifest.run_paths.values())[:RUNS_IN_BIG_FILE]:
            out.write(run_path.read_bytes())
    lines = big.read_bytes().splitlines()
    steps = sum(len(json.loads(line)["steps"]) for line in lines)
    return BigFile(suite=manifest.suite_path, path=big, records=len(lines), steps=steps)


def fresh_home(root: Path, suite: Path) -> LitmusPaths:
    paths = litmus_paths(root / "home").ensure()
    with connect(paths.duckdb_path) as con:
        store_suite(con, load_suite_file(suite), suite.name)
        con.execute("CHECKPOINT")  # so the write-ahead log grows only with the ingestion
    return paths


def start_ingestion(paths: LitmusPaths, *files: Path, stdout: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", INGEST_SCRIPT, str(paths.home), *map(str, files)],
        stdout=stdout,
        stderr=subprocess.PIPE,
        env={**os.environ, "LITMUS_HOME": str(paths.home)},
    )


def kill_while_staging(process: subprocess.Popen[bytes], paths: LitmusPaths) -> None:
    """Kill once 10,000 records are validated and staged: inside the file's transaction."""
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line.strip() == b"10000", line
    process.send_signal(signal.SIGKILL)


def kill_while_committing(process: subprocess.Popen[bytes], paths: LitmusPaths) -> None:
    """Kill while the commit is being written: the write-ahead log is growing (staging lives
    in memory, so the log only grows once the rows are published)."""
    wal = wal_path(paths.duckdb_path)
    while process.poll() is None:
        if wal.exists() and wal.stat().st_size > 2_000_000:
            process.send_signal(signal.SIGKILL)
            return
        time.sleep(0.0005)
    pytest.fail("ingestion finished before the commit could be interrupted")


def warehouse_is_sound(paths: LitmusPaths) -> dict[str, int]:
    """Open (recovering the log), read every table in full, checkpoint: row counts."""
    with connect(paths.duckdb_path) as con:
        tables = [
            name
            for (name,) in con.execute(
                "SELECT table_name FROM information_schema.tables "
                "WHERE table_type = 'BASE TABLE' AND table_catalog <> 'temp'"
            ).fetchall()
        ]
        counts = {}
        for table in tables:
            # every column of every row is decoded: a damaged block fails here
            counts[table] = len(con.execute(f'SELECT * FROM "{table}"').fetchall())
        con.execute("CHECKPOINT")
    return counts


@pytest.mark.parametrize("kill", [kill_while_staging, kill_while_committing])
def test_sigkill_part_way_then_rerun_loses_and_duplicates_nothing(
    big_file: BigFile, tmp_path: Path, kill
) -> None:
    paths = fresh_home(tmp_path, big_file.suite)
    process = start_ingestion(
        paths,
        big_file.path,
        stdout=subprocess.PIPE if kill is kill_while_staging else subprocess.DEVNULL,
    )
    try:
        kill(process, paths)
    finally:
        process.wait(timeout=120)
    assert process.returncode == -signal.SIGKILL

    counts = warehouse_is_sound(paths)
    # all or nothing: a file is one transaction
    if counts["raw_files"] == 0:
        assert counts["raw_trajectories"] == counts["raw_steps"] == counts["quarantine"] == 0
    else:
        assert kill is kill_while_committing  # the commit had become durable before the kill
        assert counts["raw_trajectories"] == big_file.records
    if kill is kill_while_staging:
        assert counts["raw_files"] == 0

    with connect(paths.duckdb_path) as con:
        report = ingest_file(con, big_file.path, paths)
        assert report.skipped == (counts["raw_files"] == 1)
        totals = con.execute(
            "SELECT count(*), count(DISTINCT trajectory_id), "
            "(SELECT count(*) FROM raw_steps), (SELECT count(*) FROM quarantine), "
            "(SELECT list(records_total) FROM raw_files) FROM raw_trajectories"
        ).fetchall()[0]
    assert totals == (
        big_file.records,
        big_file.records,
        big_file.steps,
        0,
        [big_file.records],
    )
    stored = [p for p in paths.raw_store.rglob("*") if p.is_file()]
    assert [file_sha256(p) for p in stored] == [file_sha256(big_file.path)]
    warehouse_is_sound(paths)


def test_two_processes_ingesting_at_once_both_finish(big_file: BigFile, tmp_path: Path) -> None:
    paths = fresh_home(tmp_path, big_file.suite)
    small = tmp_path / "small.jsonl"
    small.write_bytes(b"".join(big_file.path.read_bytes().splitlines(keepends=True)[:500]))
    first = start_ingestion(paths, big_file.path, stdout=subprocess.PIPE)
    second = start_ingestion(paths, small, big_file.path, stdout=subprocess.PIPE)
    outputs = [process.communicate(timeout=300) for process in (first, second)]
    for process, (_, err) in zip((first, second), outputs, strict=True):
        assert process.returncode == 0, err.decode()
        assert not any(word in err.decode() for word in LOCK_ERROR_WORDS)
    # the big file was ingested once, by whichever process got there first; the other one
    # saw it already recorded, or (if it ran first) found the small file's lines duplicated
    summaries = b"".join(out for out, _ in outputs).decode()
    assert summaries.count("already ingested") == 1, summaries
    counts = warehouse_is_sound(paths)
    assert counts["raw_files"] == 2
    with connect(paths.duckdb_path) as con:
        total, distinct = con.execute(
            "SELECT count(*), count(DISTINCT trajectory_id) FROM raw_trajectories"
        ).fetchall()[0]
        reconciled = con.execute(
            "SELECT sum(records_total) = sum(records_accepted) + sum(records_quarantined) "
            "FROM raw_files"
        ).fetchall()[0][0]
    assert total == distinct == big_file.records
    assert reconciled
