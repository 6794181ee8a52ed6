"""Storing a large JSON suite whole versus streamed family by family (issue 16).

Writes the sample generator's suite (as ``generate_sample`` and so ``bench_end_to_end.py``
write it) for each ``--families`` count (default 31,250 and 62,500 families: the 125,000-
and 250,000-instance suites of the 1M and 2M benchmarks), then stores it into a fresh
warehouse in a child process per run, alternating the whole-document path (main's, forced
by raising ``STREAM_MIN_BYTES``) and the streaming one, ``--rounds`` times each. Reports
CPU time (user+sys), wall time and the peak RSS growth of the store, with the load average.

    .venv/bin/python benchmarks/bench_suite_stream.py [--families 31250 62500] [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from litmus.sample import DEFAULT_SEED, _build_families, _suite_document

STORE_SCRIPT = """
import resource, sys, time
from pathlib import Path
from litmus.ingestion import suites
from litmus.warehouse import connect

if sys.argv[3] == "whole":
    suites.STREAM_MIN_BYTES = 1 << 62
def status_kb(field):
    # VmHWM, not ru_maxrss: ru_maxrss survives exec, so a child would inherit the parent's
    return int(next(l for l in open("/proc/self/status") if l.startswith(field)).split()[1])


with connect(Path(sys.argv[1])) as con:
    rss_kb = status_kb("VmRSS")
    usage = resource.getrusage(resource.RUSAGE_SELF)
    started = time.perf_counter()
    outcome = suites.store_suite_file(con, Path(sys.argv[2]))
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_SELF)
    peak_kb = status_kb("VmHWM")
    n = con.execute("SELECT count(*) FROM suite_instances").fetchone()[0]
    digest = con.execute("SELECT suite_hash FROM suites").fetchone()[0]
cpu = after.ru_utime + after.ru_stime - usage.ru_utime - usage.ru_stime
print(n, outcome.stored, digest, f"{cpu:.3f}", f"{wall:.3f}", (peak_kb - rss_kb) // 1024)
"""


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", type=int, nargs="+", default=[31_250, 62_500])
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    for n_families in args.families:
        with tempfile.TemporaryDirectory(prefix="litmus-bench-stream-") as work:
            suite = Path(work) / "suite.json"
            document = _suite_document(_build_families(DEFAULT_SEED, n_families))
            suite.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", "utf-8")
            del document
            print(f"suite: {n_families:,} families, {suite.stat().st_size / 1e6:,.0f} MB")
            print(f"  load average at start: {load()}")
            figures: dict[str, list[tuple[float, float, int]]] = {"whole": [], "stream": []}
            digests = set()
            for round_index in range(args.rounds):
                for mode in ("whole", "stream"):
                    warehouse = Path(work) / f"{mode}-{round_index}.duckdb"
                    line = (
                        subprocess.run(
                            [sys.executable, "-c", STORE_SCRIPT, str(warehouse), str(suite), mode],
                            check=True,
                            capture_output=True,
                            text=True,
                        )
                        .stdout.splitlines()[-1]
                        .split()
                    )
                    n, stored, digest, cpu, wall, rss_mb = line
                    assert stored == "True", line
                    digests.add((n, digest))
                    figures[mode].append((float(cpu), float(wall), int(rss_mb)))
                    print(f"  {mode:6} {n} instances: cpu {cpu} s, wall {wall} s, +{rss_mb} MB")
                    warehouse.unlink()
            assert len(digests) == 1, digests  # both paths store the same hash
            print(f"  load average at end: {load()}")
            whole, stream = (
                [statistics.median(column) for column in zip(*figures[m], strict=True)]
                for m in ("whole", "stream")
            )
            print(
                f"  median whole: cpu {whole[0]:.2f} s, +{whole[2]:.0f} MB; "
                f"stream: cpu {stream[0]:.2f} s, +{stream[2]:.0f} MB; "
                f"cpu ratio {stream[0] / whole[0]:.2f}, memory ratio {stream[2] / whole[2]:.2f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
