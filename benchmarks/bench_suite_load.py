"""Loading a large suite (issue 16: 125,000 instances in at most 5 s).

Writes the sample generator's suite for ``--families`` families (default 31,250: 125,000
instances) as ``suite.json``, then, in a child process, times ``store_suite_file`` of it
into a fresh warehouse (parse, validate, structure checks, hash, oracle tables), and a
second call with the same bytes (recognized by their digest, nothing parsed).

    .venv/bin/python benchmarks/bench_suite_load.py [--families 31250]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from litmus.sample import DEFAULT_SEED, _build_families, _suite_document

TARGET_S = 5.0

LOAD_SCRIPT = """
import sys, time
from pathlib import Path
from litmus.ingestion.suites import store_suite_file
from litmus.warehouse import connect

with connect(Path(sys.argv[1])) as con:
    started = time.perf_counter()
    first = store_suite_file(con, Path(sys.argv[2]))
    first_s = time.perf_counter() - started
    started = time.perf_counter()
    again = store_suite_file(con, Path(sys.argv[2]))
    again_s = time.perf_counter() - started
    n = con.execute("SELECT count(*) FROM suite_instances").fetchone()[0]
print(n, first.stored, again.stored, f"{first_s:.2f}", f"{again_s:.3f}")
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", type=int, default=31_250)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="litmus-bench-suite-") as work:
        suite = Path(work) / "suite.json"
        document = _suite_document(_build_families(DEFAULT_SEED, args.families))
        suite.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", "utf-8")
        print(f"suite: {args.families:,} families, {suite.stat().st_size / 1e6:,.0f} MB")
        print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        output = subprocess.run(
            [sys.executable, "-c", LOAD_SCRIPT, str(Path(work) / "w.duckdb"), str(suite)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.split()
        n, stored, stored_again, first_s, again_s = output
        print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        print("\n| measurement | seconds | target | met |")
        print("|---|---|---|---|")
        met = "yes" if float(first_s) <= TARGET_S else "no"
        row = f"| store {int(n):,} instances (stored: {stored}) | {first_s} |"
        print(f"{row} <= {TARGET_S:g} | {met} |")
        print(f"| same file again (stored: {stored_again}) | {again_s} | | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
