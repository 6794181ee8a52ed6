"""Where one ingestion's CPU goes: every DuckDB statement of ``ingest_file``, timed.

Ingests one run file into a fresh copy of a warehouse that holds its suite (the copy is
deleted after) and prints CPU and wall seconds per statement, summed over the file's
batches, largest first, with the total. Statements run on the ingestion's connection and on
the bulk path's scratch database (``bulk.open_scratch``) alike; the Arrow inserts of
``bulk.insert_arrow``, the Python side of ``bulk._incoming_lines``, the line splitting
(``run_files.split_lines``, timed line by line: its figure holds the timer's own cost, about
1 µs a line) and the per-record parser and validator are timed as one entry each. The
ingestion runs without prover processes, so every statement is this process's. It also
prints the ingestion's user and system CPU and its minor page faults (memory the allocators
hand back to the kernel and touch again). Nothing of the ingestion changes but the timing
around it.

    .venv/bin/python benchmarks/profile_ingest_statements.py RUN_FILE WAREHOUSE

``WAREHOUSE`` is a warehouse file with the run file's suite stored (``bench_ingest_memory.py
--keep`` leaves a run file and its suite; store the suite into a fresh home first).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from litmus.ingestion import bulk, run_files
from litmus.settings import litmus_paths
from litmus.warehouse import connect

LABEL_CHARS = 72


class Timings:
    """CPU and wall seconds per label."""

    def __init__(self) -> None:
        self.cpu: dict[str, float] = defaultdict(float)
        self.wall: dict[str, float] = defaultdict(float)

    def timed(self, label: str, call: Callable[[], Any]) -> Any:
        cpu, wall = time.process_time(), time.perf_counter()
        try:
            return call()
        finally:
            self.cpu[label] += time.process_time() - cpu
            self.wall[label] += time.perf_counter() - wall


def statement_label(sql: object) -> str:
    return " ".join(str(sql).split())[:LABEL_CHARS]


class TimedConnection:
    """A DuckDB connection whose ``execute`` and ``sql(...).to_arrow_table()`` are timed."""

    def __init__(self, inner: duckdb.DuckDBPyConnection, timings: Timings) -> None:
        self.inner, self.timings = inner, timings

    def execute(self, sql: str, *args: Any) -> duckdb.DuckDBPyConnection:
        return self.timings.timed(statement_label(sql), lambda: self.inner.execute(sql, *args))

    def sql(self, sql: str) -> _TimedRelation:
        return _TimedRelation(self.inner, sql, self.timings)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class _TimedRelation:
    def __init__(self, inner: duckdb.DuckDBPyConnection, sql: str, timings: Timings) -> None:
        self.inner, self.query, self.timings = inner, sql, timings

    def to_arrow_table(self) -> pa.Table:
        return self.timings.timed(
            "to Arrow: " + statement_label(self.query),
            lambda: self.inner.sql(self.query).to_arrow_table(),
        )


def instrument(timings: Timings) -> None:
    """Time the bulk path's scratch database, its Arrow inserts and its batch building."""
    open_scratch, insert_arrow, incoming = (
        bulk.open_scratch,
        bulk.insert_arrow,
        bulk._incoming_lines,
    )
    split_lines = run_files.split_lines

    def timed_open_scratch(instances: pa.Table) -> Any:
        return TimedConnection(open_scratch(instances), timings)

    def timed_split_lines(path: Path, *args: Any) -> Any:
        # the generator's own time, line by line (its consumer's time is not counted)
        lines = split_lines(path, *args)
        while True:
            try:
                line = timings.timed("Python: read and split lines", lambda: next(lines))
            except StopIteration:
                return
            yield line

    def timed_insert(con: Any, table: str, frame: pa.Table, names: str | None = None) -> None:
        # the inner connection: the insert reads ``frame`` by DuckDB's replacement scan
        timings.timed(
            f"Arrow insert into {table}",
            lambda: insert_arrow(getattr(con, "inner", con), table, frame, names),
        )

    def timed_incoming(lines: Any) -> pa.Table:
        return timings.timed("Python: decode, hash, Arrow batch", lambda: incoming(lines))

    parse_line, validate = run_files._parse_line, run_files._validate

    def timed_parse_line(raw: bytes) -> Any:
        return timings.timed("Python: per-record json.loads (_parse_line)", lambda: parse_line(raw))

    def timed_validate(value: Any) -> Any:
        return timings.timed("Python: per-record validator (_validate)", lambda: validate(value))

    run_files.open_scratch = timed_open_scratch
    run_files._parse_line = timed_parse_line
    run_files._validate = timed_validate
    run_files.split_lines = timed_split_lines
    run_files.insert_arrow = timed_insert
    bulk.insert_arrow = timed_insert
    bulk._incoming_lines = timed_incoming


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_file", type=Path)
    parser.add_argument("warehouse", type=Path)
    args = parser.parse_args()

    timings = Timings()
    instrument(timings)
    with tempfile.TemporaryDirectory(prefix="litmus-profile-ingest-") as work:
        paths = litmus_paths(Path(work) / "home").ensure()
        shutil.copyfile(args.warehouse, paths.duckdb_path)
        with connect(paths.duckdb_path) as con:
            usage = resource.getrusage(resource.RUSAGE_SELF)
            cpu, wall = time.process_time(), time.perf_counter()
            # provers=0: every statement runs in this process (a prover's run in its own)
            report = run_files.ingest_file(
                TimedConnection(con, timings),  # type: ignore[arg-type]
                args.run_file,
                paths,
                provers=0,
            )
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            after = resource.getrusage(resource.RUSAGE_SELF)
    print(report.summary(), f"({report.bulk_accepted} by the bulk path)")
    print(
        f"ingest_file: CPU {cpu:.2f} s (user {after.ru_utime - usage.ru_utime:.2f}, system "
        f"{after.ru_stime - usage.ru_stime:.2f}), wall {wall:.2f} s, minor page faults "
        f"{after.ru_minflt - usage.ru_minflt:,}, load {os.getloadavg()[0]:.1f}"
    )
    print(f"{'CPU s':>7} {'wall s':>7}  statement (summed over batches)")
    for label, seconds in sorted(timings.cpu.items(), key=lambda item: -item[1]):
        if seconds >= 0.005:
            print(f"{seconds:7.2f} {timings.wall[label]:7.2f}  {label}")
    print(f"{sum(timings.cpu.values()):7.2f} {sum(timings.wall.values()):7.2f}  timed in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
