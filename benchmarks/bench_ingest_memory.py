"""Ingestion's memory and speed on one large run file (issues 14 and 16).

Generates a run file of about ``--size-mb`` megabytes (default 1,000: the sample generator's
run files, concatenated), stores the sample suite into a fresh state folder, then, each in
its own child process of this one (same machine load):

1. the floor: DuckDB ``read_json`` of the same file, trajectories and their steps
   materialized into a DuckDB file (as in ``bench_end_to_end.py``);
2. ``ingest_file`` of the file into the fresh warehouse (strict validation, quarantine,
   one transaction).

Prints the peak RSS of the ingesting process, its ratio to the file's size (target of
issue 14: below 1 GB for a 1 GB file) and the ingestion / floor wall-time ratio (target of
issue 16: at most 3x).

    .venv/bin/python benchmarks/bench_ingest_memory.py [--size-mb 1000] [--work DIR] [--keep]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

from bench_end_to_end import FLOOR_SCRIPT, Measured, run_child

from litmus.sample import generate_sample
from litmus.settings import litmus_paths

# The sample's run files hold about 30.6 kB per family, all eight profiles together.
BYTES_PER_FAMILY = 30_600
TARGET_PEAK_OVER_FILE = 1.0
TARGET_INGEST_OVER_FLOOR = 3.0

STORE_SUITE_SCRIPT = """
import sys
from pathlib import Path
from litmus.settings import litmus_paths
from litmus.ingestion.suites import store_suite_file
from litmus.warehouse import connect

paths = litmus_paths(sys.argv[1])
with connect(paths.duckdb_path) as con:
    store_suite_file(con, Path(sys.argv[2]))
    con.execute("CHECKPOINT")
"""
INGEST_SCRIPT = """
import sys
from pathlib import Path
from litmus.ingestion.run_files import ingest_file
from litmus.settings import litmus_paths
from litmus.warehouse import connect

paths = litmus_paths(sys.argv[1])
with connect(paths.duckdb_path) as con:
    vectorized = sys.argv[3] == "bulk"
    report = ingest_file(con, Path(sys.argv[2]), paths, vectorized=vectorized)
    print(report.summary(), f"({report.bulk_accepted} by the bulk path)")
"""


def children_cpu_s() -> float:
    """User + system CPU seconds of every child process reaped so far (their descendants
    included): the difference around a child is its CPU time, less noisy than wall time on
    a shared machine."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def generate_run_file(work: Path, size_mb: float) -> tuple[Path, Path]:
    """(suite file, one run file of about ``size_mb`` MB holding every profile's records)."""
    n_families = max(1, round(size_mb * 1e6 / BYTES_PER_FAMILY))
    manifest = generate_sample(work / "generated", n_families=n_families)
    run_file = work / "big-run.jsonl"
    with run_file.open("wb") as out:
        for path in sorted(manifest.run_paths.values()):
            with path.open("rb") as source:
                shutil.copyfileobj(source, out, 1 << 20)
            path.unlink()
    return manifest.suite_path, run_file


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=float, default=1_000.0)
    parser.add_argument("--work", help="folder for the files (default: a temporary one)")
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="reuse the run file and suite a --keep run left in --work (same size)",
    )
    parser.add_argument("--no-floor", action="store_true", help="skip DuckDB's own read")
    parser.add_argument(
        "--reference",
        action="store_true",
        help="every record through the per-record validator (vectorized=False), for comparison",
    )
    args = parser.parse_args()

    work = Path(args.work or tempfile.mkdtemp(prefix="litmus-bench-ingest-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        started = time.perf_counter()
        kept = (work / "big-run.jsonl", *sorted((work / "generated").glob("**/*suite*.json*")))
        if args.reuse and kept[0].is_file() and len(kept) == 2:
            run_file, suite = kept
        else:
            suite, run_file = generate_run_file(work, args.size_mb)
        size_mb = run_file.stat().st_size / 1e6
        print(f"run file: {size_mb:,.0f} MB, generated in {time.perf_counter() - started:.0f} s")
        print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")

        floor: Measured | None = None
        if not args.no_floor:
            floor_db = work / "floor.duckdb"
            floor_db.unlink(missing_ok=True)
            cpu_before = children_cpu_s()
            floor = run_child([sys.executable, "-c", FLOOR_SCRIPT, str(floor_db), str(run_file)])
            floor_cpu_s = children_cpu_s() - cpu_before
            floor_db.unlink(missing_ok=True)
            print(
                f"floor (DuckDB read_json): {floor.wall_s:.1f} s (CPU {floor_cpu_s:.1f} s), "
                f"rows {floor.output.strip()}, peak RSS {floor.peak_rss_mb:,.0f} MB, "
                f"load {os.getloadavg()[0]:.2f}"
            )

        home = work / "home"
        shutil.rmtree(home, ignore_errors=True)
        paths = litmus_paths(home).ensure()
        run_child([sys.executable, "-c", STORE_SUITE_SCRIPT, str(paths.home), str(suite)])
        mode = "reference" if args.reference else "bulk"
        cpu_before = children_cpu_s()
        ingest = run_child(
            [sys.executable, "-c", INGEST_SCRIPT, str(paths.home), str(run_file), mode]
        )
        ingest_cpu_s = children_cpu_s() - cpu_before
        print(
            f"ingestion ({mode} path): {ingest.wall_s:.1f} s (CPU {ingest_cpu_s:.1f} s), "
            f"{ingest.output.splitlines()[-1]}, load {os.getloadavg()[0]:.2f}"
        )
        print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")

        peak_ratio = ingest.peak_rss_mb / size_mb
        print("\n| measurement | value | target | met |")
        print("|---|---|---|---|")
        print(
            f"| ingestion peak RSS | {ingest.peak_rss_mb:,.0f} MB = {peak_ratio:.2f}x the "
            f"file | < {TARGET_PEAK_OVER_FILE:g}x | {'yes' if peak_ratio < 1 else 'no'} |"
        )
        if floor is not None:
            ratio = ingest.wall_s / floor.wall_s
            print(
                f"| ingestion / DuckDB read | {ingest.wall_s:.1f} s / {floor.wall_s:.1f} s = "
                f"{ratio:.1f}x | <= {TARGET_INGEST_OVER_FLOOR:g}x | "
                f"{'yes' if ratio <= TARGET_INGEST_OVER_FLOOR else 'no'} |"
            )
            print(
                f"| ingestion / DuckDB read, CPU time | {ingest_cpu_s:.1f} s / "
                f"{floor_cpu_s:.1f} s = {ingest_cpu_s / floor_cpu_s:.1f}x | | |"
            )
    finally:
        if not args.keep and not args.work:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
