"""Ingestion with the bulk path's proofs in prover processes (litmus/ingestion/provers.py)
against the same ingestion proving in the ingesting process itself.

The parallel path must store exactly what the serial one does, in the same order: the same
rows of every table in the same row order, the same quarantine rows (file, line, field,
reason, excerpt), the same reports and progress reports. Hostile files (the mixed corpus of
test_ingest_bulk) are cut into small batches so that every file spans many batches and both
provers; some records are handed over already parsed (as importers do), which makes the
ingesting process stage every batch cut before them first. A prover that dies, or an error
in the ingesting process, rolls the file back and leaves no process behind.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import random
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st
from property_examples import examples, floor_for
from test_fuzz_ingest import file_settings
from test_ingest_bulk import fresh_home, mixed_files

from litmus.ingestion import bulk, run_files
from litmus.ingestion import provers as prover_protocol
from litmus.ingestion.bulk import batch_table, open_scratch, prove_lines, stored_instances
from litmus.ingestion.provers import ProverError, ProverPool
from litmus.ingestion.run_files import (
    IngestReport,
    NotARegularFileError,
    SourceItem,
    file_sha256,
    ingest_file,
    ingest_files,
    ingest_items,
)
from litmus.ingestion.suites import load_suite_file, store_suite
from litmus.sample import generate_sample
from litmus.settings import litmus_paths
from litmus.warehouse import connect

EXAMPLES = examples(8)


def ordered_rows(con: duckdb.DuckDBPyConnection) -> dict[str, list[tuple[Any, ...]]]:
    """Every row ingestion stored, in the tables' own row order (clock readings aside)."""
    queries = {
        "raw_trajectories": "SELECT * FROM raw_trajectories ORDER BY rowid",
        "raw_steps": "SELECT * FROM raw_steps ORDER BY rowid",
        "quarantine": "SELECT * EXCLUDE (quarantined_at) FROM quarantine ORDER BY rowid",
        "raw_files": "SELECT * EXCLUDE (stored_path, ingested_at) FROM raw_files ORDER BY rowid",
    }
    return {table: con.execute(query).fetchall() for table, query in queries.items()}


def _items(lines: list[bytes], parsed_every: int) -> Iterator[SourceItem]:
    """The file's items; every ``parsed_every``-th line that is JSON as an object already
    parsed (an importer's item), the rest as raw lines."""
    for line_no, line in enumerate(lines, start=1):
        if parsed_every and line_no % parsed_every == 0:
            try:
                value = json.loads(line)
                # an importer's items are Python text: no lone surrogate (which only a
                # "\\ud800" escape in raw JSON can carry, and the raw line's path reports)
                json.dumps(value, ensure_ascii=False).encode("utf-8")
            except (ValueError, RecursionError):
                pass
            else:
                yield line_no, value
                continue
        yield line_no, line


def _children() -> set[tuple[int, int]]:
    """The live child processes of this one (from /proc), each as (pid, start time): the
    start time tells a pid the kernel reused for a new child from the one it had before."""
    mine = str(os.getpid())
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rpartition(")")[2].split()
            except OSError:
                continue
            # fields[0] is the state (field 3 of stat), [1] the parent, [19] the start time
            if fields[1] == mine and fields[0] != "Z":
                found.add((int(entry.name), int(fields[19])))
    return found


def _new_children(before: set[tuple[int, int]]) -> set[int]:
    """The pids of the live children that were not there before the test: the ones it
    started. Under xdist a worker also runs other modules, whose own children (a Dagster
    run, a dbt invocation, a pool worker) may still be alive; they are not this test's
    business, but every child the test started must be gone when it ends."""
    return {pid for pid, _ in _children() - before}


def test_provers_store_the_serial_paths_rows_in_its_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # batches of a few lines: every file spans many batches, handed to both provers in turn
    monkeypatch.setattr(run_files, "BULK_LINES", 7)
    before = _children()
    serial, parallel = fresh_home(tmp_path, "serial"), fresh_home(tmp_path, "parallel")
    counter = {"files": 0, "bulk_accepted": 0, "batches": 0}
    with connect(serial.duckdb_path) as s_con, connect(parallel.duckdb_path) as p_con:

        @file_settings(EXAMPLES)
        @given(mixed_files(), st.sampled_from([0, 0, 5, 23]))
        def same_rows(lines: list[bytes], parsed_every: int) -> None:
            counter["files"] += 1
            name = f"mixed-{counter['files']}.jsonl"
            stored = tmp_path / name
            stored.write_bytes(b"".join(line + b"\n" for line in lines))
            reports = []
            for con, provers in ((s_con, 0), (p_con, 2)):
                progress: list[int] = []
                report = ingest_items(
                    con,
                    _items(lines, parsed_every),
                    source_name=name,
                    file_hash=file_sha256(stored),
                    stored_path=stored,
                    file_format="native-jsonl",
                    size_bytes=stored.stat().st_size,
                    progress=progress.append,
                    provers=provers,
                )
                reports.append((report, progress))
            (expected, expected_progress), (got, got_progress) = reports
            assert got == expected
            assert got_progress == expected_progress
            counter["bulk_accepted"] += got.bulk_accepted
            counter["batches"] += len(lines) // 7

        same_rows()
        expected_rows, got_rows = ordered_rows(s_con), ordered_rows(p_con)
    for table, rows in expected_rows.items():
        assert got_rows[table] == rows, table
    assert counter["bulk_accepted"] >= floor_for(20, 8)
    assert len(expected_rows["quarantine"]) >= floor_for(200, 8)
    assert counter["batches"] >= 4 * EXAMPLES
    assert not _new_children(before)


@pytest.fixture(scope="module")
def sample_file(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(suite, one run file of 26,460 lines: three bulk batches and then some)."""
    root = tmp_path_factory.mktemp("provers-sample")
    manifest = generate_sample(root / "sample", n_families=700)
    joined = root / "joined.jsonl"
    joined.write_bytes(b"".join(path.read_bytes() for path in sorted(manifest.run_paths.values())))
    return manifest.suite_path, joined


def _home(root: Path, name: str, suite: Path) -> Any:
    paths = litmus_paths(root / name).ensure()
    with connect(paths.duckdb_path) as con:
        store_suite(con, load_suite_file(suite), suite.name)
    return paths


def test_a_real_file_through_the_provers_is_the_serial_ingestion(
    sample_file: tuple[Path, Path], tmp_path: Path
) -> None:
    suite, joined = sample_file
    before = _children()
    results = {}
    for provers in (0, 1, 2):
        paths = _home(tmp_path, f"home-{provers}", suite)
        progress: list[int] = []
        with connect(paths.duckdb_path) as con:
            report = ingest_file(con, joined, paths, progress=progress.append, provers=provers)
            results[provers] = (report.summary(), report.bulk_accepted, progress, ordered_rows(con))
    assert results[0][2] == [10_000, 20_000, 26_460]
    assert results[1] == results[0]
    assert results[2] == results[0]
    assert not _new_children(before)


def test_a_prover_that_dies_rolls_the_file_back(
    sample_file: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A prover killed mid-file (say, by the kernel's OOM killer) fails the file's
    ingestion: nothing of it is stored, the other prover is stopped, and a later run
    ingests the file in full."""
    # 23 batches: at the first progress report most are still to be handed out
    monkeypatch.setattr(run_files, "BULK_LINES", 1_000)
    suite, joined = sample_file
    paths = _home(tmp_path, "home", suite)
    before = _children()

    def kill_the_provers(count: int) -> None:
        # only the provers this ingestion started: never another module's child
        for pid in _new_children(before):
            os.kill(pid, signal.SIGKILL)

    with connect(paths.duckdb_path) as con:
        with pytest.raises(ProverError, match=r"prover process failed \(killed by SIGKILL\)"):
            ingest_file(con, joined, paths, progress=kill_the_provers, provers=2)
        assert ordered_rows(con) == {
            "raw_trajectories": [],
            "raw_steps": [],
            "quarantine": [],
            "raw_files": [],
        }
        assert not _new_children(before)
        report = ingest_file(con, joined, paths, provers=2)
        assert report.accepted == 26_460
    assert not _new_children(before)


def test_an_error_while_staging_stops_the_provers(
    sample_file: tuple[Path, Path], tmp_path: Path
) -> None:
    suite, joined = sample_file
    paths = _home(tmp_path, "home", suite)
    before = _children()

    def fail(count: int) -> None:
        raise RuntimeError(f"stopped at {count}")

    with connect(paths.duckdb_path) as con:
        with pytest.raises(RuntimeError, match="stopped at 10000"):
            ingest_file(con, joined, paths, progress=fail, provers=2)
        assert con.execute("SELECT count(*) FROM raw_trajectories").fetchone() == (0,)
    assert not _new_children(before)


def _proven_rows(proof: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A batch's proof as (trajectory rows, step rows); every batch here proves something."""
    assert proof is not None
    trajectories, steps = proof
    return trajectories.to_pylist(), steps.to_pylist()


def _proven_here(
    instances: pa.Table, batches: list[list[tuple[int, bytes]]]
) -> list[tuple[list[dict[str, Any]], list[dict[str, Any]]]]:
    """The proofs of ``batches`` computed in this process, as :func:`_proven_rows`."""
    scratch = open_scratch(instances)
    try:
        return [_proven_rows(prove_lines(scratch, batch, "f" * 64)) for batch in batches]
    finally:
        scratch.close()


def test_handing_a_batch_to_a_busy_prover_does_not_wait_for_it(
    sample_file: tuple[Path, Path], tmp_path: Path
) -> None:
    """A batch (megabytes, far more than a pipe holds) is handed to a prover that is not
    reading: the hand-over returns at once, so the ingesting process proves and stages
    meanwhile instead of waiting for the prover (which kept one of two cores idle). Once the
    prover reads again, its proofs are the ones the ingesting process computes itself."""
    suite, joined = sample_file
    paths = _home(tmp_path, "home", suite)
    lines = list(enumerate(joined.read_bytes().splitlines(keepends=True)[:6_000], start=1))
    batches = [lines[:3_000], lines[3_000:]]
    assert all(sum(len(line) for _, line in batch) > 1 << 20 for batch in batches)
    with connect(paths.duckdb_path) as con:
        instances = stored_instances(con)
    before = _children()
    pool = ProverPool(1, instances, "f" * 64)
    prover = pool.provers[0].worker.process
    try:
        os.kill(prover.pid, signal.SIGSTOP)
        handing_over = threading.Thread(target=lambda: [pool.submit(b) for b in batches])
        handing_over.start()
        handing_over.join(timeout=120)  # generous: returning at all is the point
        stuck = handing_over.is_alive()
        os.kill(prover.pid, signal.SIGCONT)
        handing_over.join()
        assert not stuck, "handing a batch over waited for the stopped prover"
        received = [pool.receive() for _ in batches]
    finally:
        os.kill(prover.pid, signal.SIGCONT)
        pool.close()
    assert [_proven_rows(proof) for proof in received] == _proven_here(instances, batches)
    assert not _new_children(before)


@pytest.mark.parametrize("largest_buffer", [bulk.MAX_BINARY_BYTES, 100])
def test_a_batch_table_holds_every_line_as_given(
    largest_buffer: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The batch built from its buffers is the table ``pyarrow.array`` makes of the same
    lines (empty lines, any bytes, line numbers as given); above what one array's 32-bit
    offsets hold (here lowered to 100 bytes) it is made by ``pyarrow.array`` itself."""
    monkeypatch.setattr(bulk, "MAX_BINARY_BYTES", largest_buffer)
    rng = random.Random(16)
    for count in (0, 1, 2, 7, 500):
        lines = [
            (rng.randrange(1, 10**12), rng.randbytes(rng.choice([0, 1, 3, 40, 300])))
            for _ in range(count)
        ]
        got = bulk.batch_table(lines)
        got.validate(full=True)
        expected = pa.table(
            {
                "line_no": pa.array([number for number, _ in lines], pa.int64()),
                "line": pa.array([payload for _, payload in lines], pa.binary()),
            },
            schema=bulk.BATCH_SCHEMA,
        )
        assert got.equals(expected)


def test_a_prover_proves_what_the_ingesting_process_computes(
    sample_file: tuple[Path, Path], tmp_path: Path
) -> None:
    """The real prover process, fed a file's instances and two batches over its protocol,
    returns the proofs the ingesting process computes itself. (Not whether pandas is
    imported: DuckDB 1.5, pinned for the lake's extensions, imports it on a process's first
    query with parameters.)"""
    suite, joined = sample_file
    paths = _home(tmp_path, "home", suite)
    with connect(paths.duckdb_path) as con:
        instances = stored_instances(con)
    lines = list(enumerate(joined.read_bytes().splitlines()[:3_000], start=1))
    batches = [lines[:2_000], lines[2_000:]]
    request = io.BytesIO()
    prover_protocol._write_table(
        request, instances.replace_schema_metadata({b"file_hash": b"f" * 64})
    )
    for batch in batches:
        prover_protocol._write_table(request, batch_table(batch))
    prover = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "litmus.ingestion.provers"],
        input=request.getvalue(),
        capture_output=True,
        check=True,
    )
    imported = {line.rpartition("|")[2].strip() for line in prover.stderr.decode().splitlines()}
    assert "duckdb" in imported and "pyarrow" in imported
    answer = io.BytesIO(prover.stdout)
    received = [
        (prover_protocol._read_table(answer), prover_protocol._read_table(answer)) for _ in batches
    ]
    assert prover_protocol._read_table(answer) is prover_protocol._EOF
    assert [_proven_rows(proof) for proof in received] == _proven_here(instances, batches)
    # nearly every line is proven: the validator decides records carrying a post-state and
    # a few others of the sample
    with_post_state = sum(b'"post_state"' in line for _, line in lines)
    proven = sum(len(_proven_rows(proof)[0]) for proof in received)
    assert proven > 2_900 - with_post_state


@pytest.fixture(scope="module")
def landed_series(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    """(suite, landed files in landing order): sample files, an exact copy of the first
    under another name, one with hostile lines among its records, and one repeating records
    of the file before it (duplicates across files)."""
    root = tmp_path_factory.mktemp("provers-series")
    manifest = generate_sample(root / "sample", n_families=300)
    runs = sorted(manifest.run_paths.values())
    landing = root / "landing"
    landing.mkdir()
    first, second, third, fourth = (path.read_bytes().splitlines() for path in runs[:4])
    hostile = list(second)
    for at, line in (
        (5, b"{not json"),
        (300, b'{"schema_version": 1,}'),
        (600, b"\xff\xfe not utf-8"),
        (900, second[3]),  # a duplicate within the file
        (1_100, b"   "),
    ):
        hostile.insert(at, line)
    contents = {
        "1-first.jsonl": first,
        "2-first-again.jsonl": first,
        "3-hostile.jsonl": hostile,
        "4-third.jsonl": third,
        "5-third-repeated.jsonl": third[:700],
        "6-fourth.jsonl": fourth,
    }
    files = []
    for name, lines in contents.items():
        path = landing / name
        path.write_bytes(b"".join(line + b"\n" for line in lines))
        files.append(path)
    return manifest.suite_path, files


def _comparable(report: IngestReport) -> IngestReport:
    return dataclasses.replace(report, stored_path=Path("-"))  # the home's own raw store


@pytest.fixture
def small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    """Files of a few hundred kilobytes in several batches each, all through one prover."""
    monkeypatch.setattr(run_files, "BULK_LINES", 200)
    monkeypatch.setattr(run_files, "PROVERS_MIN_BYTES", 0)
    monkeypatch.setenv("LITMUS_INGEST_PROVERS", "1")


@pytest.mark.usefixtures("small_batches")
def test_files_ingested_in_a_row_store_what_each_file_alone_stores(
    landed_series: tuple[Path, list[Path]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While one file commits, the next one's first batches are proven: every row, report
    and progress report is what ingesting the files one at a time gives."""
    suite, files = landed_series
    head_starts: dict[str, int] = {}
    start_proving = run_files.start_proving

    def recorded(*args: Any) -> run_files.HeadStart:
        head_start = start_proving(*args)
        head_starts[args[3]] = len(head_start.batches)
        return head_start

    monkeypatch.setattr(run_files, "start_proving", recorded)
    before = _children()
    alone_home, series_home = _home(tmp_path, "alone", suite), _home(tmp_path, "series", suite)
    alone, in_series = [], []
    with connect(alone_home.duckdb_path) as con:
        for path in files:
            progress: list[int] = []
            # serially: the provers' rows are the serial path's (the tests above)
            report = ingest_file(con, path, alone_home, progress=progress.append, provers=0)
            alone.append((path, _comparable(report), progress))
        expected_rows = ordered_rows(con)
    assert not head_starts
    series_progress: dict[Path, list[int]] = {path: [] for path in files}
    with connect(series_home.duckdb_path) as con:
        for path, outcome in ingest_files(
            con, files, series_home, progress=lambda path, n: series_progress[path].append(n)
        ):
            assert isinstance(outcome, IngestReport)
            in_series.append((path, _comparable(outcome), series_progress[path]))
        got_rows = ordered_rows(con)
    assert in_series == alone
    for table, rows in expected_rows.items():
        assert got_rows[table] == rows, table
    # a file was proven ahead while the one before it committed: four batches (the bound),
    # three of the short repeat; never a copy of the file committing, nor after a file
    # already ingested (nothing committed there)
    digests = {path.name: file_sha256(path) for path in files}
    assert head_starts == {
        digests["4-third.jsonl"]: 4,
        digests["5-third-repeated.jsonl"]: 3,
        digests["6-fourth.jsonl"]: 4,
    }
    reports = {path.name: report for path, report, _ in alone}
    assert reports["2-first-again.jsonl"].skipped
    assert reports["3-hostile.jsonl"].quarantined == 5
    assert reports["5-third-repeated.jsonl"].quarantined == 700
    assert not _new_children(before)


@pytest.mark.usefixtures("small_batches")
def test_a_next_file_that_cannot_be_read_fails_in_its_own_turn(
    landed_series: tuple[Path, list[Path]], tmp_path: Path
) -> None:
    """The next file is hashed while the current one commits; a symlink there is refused
    and a file gone is an error, each only once its turn comes: the file before is kept."""
    suite, files = landed_series
    link, gone = tmp_path / "link.jsonl", tmp_path / "gone.jsonl"
    link.symlink_to(files[3])
    paths = _home(tmp_path, "home", suite)
    before = _children()
    seen: list[tuple[str, str]] = []
    with connect(paths.duckdb_path) as con:
        with pytest.raises(FileNotFoundError, match=r"gone\.jsonl"):
            for path, outcome in ingest_files(con, [files[0], link, files[3], gone], paths):
                seen.append((path.name, type(outcome).__name__))
        stored = con.execute("SELECT original_name FROM raw_files ORDER BY 1").fetchall()
    assert seen == [
        ("1-first.jsonl", "IngestReport"),
        ("link.jsonl", NotARegularFileError.__name__),
        ("4-third.jsonl", "IngestReport"),
    ]
    assert stored == [("1-first.jsonl",), ("4-third.jsonl",)]
    assert not _new_children(before)


@pytest.mark.usefixtures("small_batches")
def test_an_error_after_a_commit_stops_the_next_files_provers(
    landed_series: tuple[Path, list[Path]], tmp_path: Path
) -> None:
    """The first file is committed and the second's head start is being proven when the
    ingestion fails: the second's provers are stopped, nothing of it is stored, and the next
    run ingests it in full."""
    suite, files = landed_series
    paths = _home(tmp_path, "home", suite)
    before = _children()
    total = len(files[0].read_bytes().splitlines())

    def fail_once_committed(path: Path, count: int) -> None:
        if count == total:
            raise RuntimeError(f"stopped after {path.name}")

    with connect(paths.duckdb_path) as con:
        with pytest.raises(RuntimeError, match=r"stopped after 1-first\.jsonl"):
            for _ in ingest_files(con, [files[0], files[3]], paths, progress=fail_once_committed):
                pass
        assert con.execute("SELECT original_name FROM raw_files").fetchall() == [("1-first.jsonl",)]
        assert not _new_children(before)
        outcomes = list(ingest_files(con, [files[0], files[3]], paths))
        assert [outcome.skipped for _, outcome in outcomes] == [True, False]  # type: ignore[union-attr]
        stored = con.execute("SELECT count(*) FROM raw_trajectories").fetchone()
    assert stored == (total + len(files[3].read_bytes().splitlines()),)
    assert not _new_children(before)


def test_a_big_suites_batches_prove_without_spilling(
    sample_file: tuple[Path, Path], tmp_path: Path
) -> None:
    """The scratch database's memory limit grows with the stored instances: with a suite of
    two million instances (a table larger than a batch's whole budget) a batch of the
    sample's lines is proven in memory, as with a small suite, not spilled (a spilling batch
    crashed DuckDB 1.5.5)."""
    suite, joined = sample_file
    paths = _home(tmp_path, "home", suite)
    with connect(paths.duckdb_path) as con:
        instances = stored_instances(con)
    n = 2_000_000
    many = pa.table(
        {
            "suite": pa.array(["another-suite"] * n),
            "suite_version": pa.array(["1"] * n),
            "instance_id": pa.array([f"family-{i:07d}/harmful_paraphrase" for i in range(n)]),
        }
    ).cast(instances.schema)
    lines = list(enumerate(joined.read_bytes().splitlines()[: run_files.BULK_LINES], start=1))
    small = _proven_here(instances, [lines])
    scratch = open_scratch(pa.concat_tables([instances, many]))
    try:
        assert [_proven_rows(prove_lines(scratch, lines, "f" * 64))] == small
        (spilled,) = scratch.execute(
            "SELECT sum(temporary_storage_bytes) FROM duckdb_memory()"
        ).fetchone()
        assert spilled == 0
    finally:
        scratch.close()


def test_a_failed_provers_message_leads_with_what_failed() -> None:
    """The CLI shows an error's first line: it names the exception a prover's traceback
    ends with (or the signal that killed it), not "Traceback (most recent call last):"."""
    traceback = (
        'Traceback (most recent call last):\n  File "x.py", line 1, in <module>\n'
        "duckdb.OutOfMemoryException: Out of Memory Error: could not allocate block\n"
    )
    message = prover_protocol._failure_message(1, traceback.strip())
    assert message.splitlines()[0] == (
        "an ingestion prover process failed (duckdb.OutOfMemoryException: "
        "Out of Memory Error: could not allocate block)"
    )
    assert traceback.strip() in message
    assert prover_protocol._failure_message(-11, "") == (
        "an ingestion prover process failed (killed by SIGSEGV)"
    )
