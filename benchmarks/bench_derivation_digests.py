"""What the digests of derived rows (litmus.ingestion.derivation, issue 44) cost ingestion and
labeling.

Generates a sample (``--families``; 4 trajectories per family per run file), then ingests its
first ``--files`` run files into fresh warehouses, alternately (which goes first alternates
too) with the digests recorded in
each file's ingestion transaction (``record_staged``, timed alone) and without, and times the
check labeling runs before each configuration (``check_configuration``).

    .venv/bin/python benchmarks/bench_derivation_digests.py [--families 31250] [--files 2]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from litmus.ingestion import derivation, run_files
from litmus.ingestion.suites import store_suite_file
from litmus.sample import generate_sample
from litmus.settings import litmus_paths
from litmus.warehouse import connect


def _ingest(root: Path, suite: Path, runs: list[Path], *, digests: bool) -> dict[str, float]:
    home = root / ("home-digests" if digests else "home-plain")
    shutil.rmtree(home, ignore_errors=True)
    paths = litmus_paths(home).ensure()
    recorded = derivation.record_staged
    spent = [0.0]

    def timed(con, file_hash):  # type: ignore[no-untyped-def]
        started = time.perf_counter()
        recorded(con, file_hash)
        spent[0] += time.perf_counter() - started

    derivation.record_staged = timed if digests else (lambda con, file_hash: None)
    try:
        with connect(paths.duckdb_path) as con:
            store_suite_file(con, suite)
            started = time.perf_counter()
            for path in runs:
                run_files.ingest_file(con, path, paths)
                print(f"  ingested {path.name}", flush=True)
            ingest = time.perf_counter() - started
            trajectories = con.execute("SELECT count(*) FROM raw_trajectories").fetchone()[0]
            checks = 0.0
            if digests:
                keys = [r[0] for r in con.execute(
                    "SELECT DISTINCT partition_key FROM raw_trajectories ORDER BY 1"
                ).fetchall()]  # fmt: skip
                started = time.perf_counter()
                for key in keys:
                    derivation.check_configuration(con, key)
                checks = time.perf_counter() - started
    finally:
        derivation.record_staged = recorded
    return {
        "trajectories": trajectories,
        "ingest_s": ingest,
        "digests_s": spent[0],
        "checks_s": checks,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--families", type=int, default=31_250)
    parser.add_argument("--files", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2, help="alternated pairs")
    parser.add_argument("--work", help="folder (default: a temporary one, deleted)")
    args = parser.parse_args()
    root = Path(args.work or tempfile.mkdtemp(prefix="bench-digests-"))
    try:
        print(f"generating {args.families} families in {root}", flush=True)
        manifest = generate_sample(root / "sample", n_families=args.families)
        runs = sorted(manifest.run_paths.values())[: args.files]
        for round_ in range(args.rounds):
            # alternated: which goes first changes every round (the first pays cold caches)
            for digests in (True, False) if round_ % 2 else (False, True):
                result = _ingest(root, manifest.suite_path, runs, digests=digests)
                print(
                    f"round {round_ + 1} {'with' if digests else 'without'} digests: "
                    f"{result['trajectories']} trajectories ingested in "
                    f"{result['ingest_s']:.2f} s, of which recording digests "
                    f"{result['digests_s']:.2f} s; checking every configuration "
                    f"{result['checks_s']:.2f} s",
                    flush=True,
                )
    finally:
        if not args.work:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
