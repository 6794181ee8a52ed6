"""CPU time of ingestion's bulk path alone, this checkout against another, in one process.

Whole-ingestion timings on a shared two-core machine vary by a quarter between identical
runs, more than most changes to the bulk path gain. This benchmark times only
``bulk.stage_provable_lines`` over every batch of one run file (the batches ingestion makes,
staged into a fresh copy of a warehouse that holds the suite, rolled back after), alternating
this checkout's ``litmus/ingestion/bulk.py`` with ``--against``'s (for example the main
checkout's) in the same process, so both see the same load. It also checks that both staged
exactly the same rows.

    .venv/bin/python benchmarks/bench_ingest_batches.py RUN_FILE WAREHOUSE \
        [--against ../main/litmus/ingestion/bulk.py] [--rounds 4]

``WAREHOUSE`` is a warehouse file with the run file's suite stored (``bench_ingest_memory.py
--keep`` leaves a run file and suite to store; it is copied, never written).
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType

from litmus.ingestion import bulk
from litmus.ingestion.run_files import _STAGING_DDL, BULK_LINES, split_lines
from litmus.warehouse import connect

# Whatever the other checkout stages, both must stage these same rows in the same order.
STAGED_DIGESTS = (
    "SELECT count(*), md5(string_agg(trajectory_id || record_sha256 || partition_key || "
    "source_line::VARCHAR, ',' ORDER BY source_line)) FROM staged_trajectories",
    "SELECT count(*), md5(string_agg(trajectory_id || step_idx::VARCHAR || "
    "coalesce(arguments_json, '-') || coalesce(match_args::VARCHAR, '-') || "
    "coalesce(output, '-'), ',' ORDER BY source_line, step_idx)) FROM staged_steps",
)


def load_module(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location("bulk_against", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"{path}: not a Python module")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def stage_all(
    module: ModuleType, warehouse: Path, batches: list[list[tuple[int, bytes]]], work: Path
) -> tuple[float, list[tuple[object, ...]]]:
    """CPU seconds of staging every batch with ``module``, and digests of what it staged."""
    copy = work / "warehouse.duckdb"
    shutil.copyfile(warehouse, copy)
    with connect(copy) as con:
        con.execute("BEGIN")
        con.execute(_STAGING_DDL)
        worker = module.open_worker(con)
        started = time.process_time()
        for batch in batches:
            module.stage_provable_lines(con, worker, batch, "0" * 64)
        cpu_s = time.process_time() - started
        digests = [con.execute(sql).fetchall()[0] for sql in STAGED_DIGESTS]
        worker.close()
        con.execute("ROLLBACK")
    copy.unlink()
    return cpu_s, digests


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_file", type=Path)
    parser.add_argument("warehouse", type=Path)
    parser.add_argument("--against", type=Path, help="another checkout's bulk.py")
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()

    lines = list(enumerate(split_lines(args.run_file), start=1))
    batches = [lines[i : i + BULK_LINES] for i in range(0, len(lines), BULK_LINES)]
    modules = {"this checkout": bulk}
    if args.against is not None:
        modules["against"] = load_module(args.against)
    times: dict[str, list[float]] = {name: [] for name in modules}
    staged: dict[str, list[tuple[object, ...]]] = {}
    with tempfile.TemporaryDirectory(prefix="litmus-bench-batches-") as work:
        for round_no in range(args.rounds):
            order = list(modules.items())
            if round_no % 2:
                order.reverse()  # neither always runs first
            for name, module in order:
                cpu_s, staged[name] = stage_all(module, args.warehouse, batches, Path(work))
                times[name].append(cpu_s)
    print(f"{len(lines):,} lines in {len(batches)} batches")
    for name, values in times.items():
        rounds = " ".join(f"{value:.2f}" for value in values)
        print(f"{name}: CPU {rounds} s, mean {sum(values) / len(values):.2f} s")
    if len({repr(digests) for digests in staged.values()}) != 1:
        print("the two checkouts staged different rows:", staged)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
