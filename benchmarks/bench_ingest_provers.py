"""Ingestion of one run file with 0, 1, 2 ... prover processes, alternating (issue 16).

Each round ingests the file once per prover count, each in a fresh copy of a state folder
that holds only the suite (as ``bench_ingest_memory.py --keep`` leaves in ``WORK/home``,
before its ingestion: pass ``--home`` a folder holding only the suite), in a child process.
Per ingestion it prints the wall time, the ingesting process's CPU time, the provers' CPU
time (every descendant of the child), the peak RSS of the ingesting process and of the
largest prover. On a shared machine compare CPU: the ingesting process's CPU is the
critical path when a free core runs the prover.

    .venv/bin/python benchmarks/bench_ingest_provers.py RUN_FILE HOME [--provers 0 1] [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = """
import json, resource, shutil, sys, time
from pathlib import Path
from litmus.ingestion.run_files import ingest_file
from litmus.settings import litmus_paths
from litmus.warehouse import connect

def cpu(who):
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime

paths = litmus_paths(sys.argv[2])
with connect(paths.duckdb_path) as con:
    wall, own = time.perf_counter(), cpu(resource.RUSAGE_SELF)
    report = ingest_file(con, Path(sys.argv[1]), paths, provers=int(sys.argv[3]))
    wall, own = time.perf_counter() - wall, cpu(resource.RUSAGE_SELF) - own
    digest = con.execute(
        "SELECT (SELECT sum(hash(t)) FROM raw_trajectories t)::VARCHAR || "
        "(SELECT sum(hash(s)) FROM raw_steps s)::VARCHAR"
    ).fetchone()[0]
print(json.dumps({
    "wall": wall, "main_cpu": own, "provers_cpu": cpu(resource.RUSAGE_CHILDREN),
    "main_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    "prover_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
    "accepted": report.accepted, "bulk": report.bulk_accepted, "digest": digest,
}))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_file", type=Path)
    parser.add_argument("home", type=Path, help="a state folder holding only the suite")
    parser.add_argument("--provers", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    digests = set()
    with tempfile.TemporaryDirectory(prefix="litmus-bench-provers-") as scratch:
        for round_no in range(1, args.rounds + 1):
            for provers in args.provers:
                home = Path(scratch) / f"home-{round_no}-{provers}"
                shutil.copytree(args.home, home)
                load = os.getloadavg()[0]
                out = subprocess.run(
                    [sys.executable, "-c", CHILD, str(args.run_file), str(home), str(provers)],
                    check=True,
                    capture_output=True,
                    text=True,
                ).stdout
                result = json.loads(out.strip().splitlines()[-1])
                digests.add(result["digest"])
                print(
                    f"round {round_no} provers={provers}: wall {result['wall']:.2f} s, "
                    f"ingesting process CPU {result['main_cpu']:.2f} s, provers CPU "
                    f"{result['provers_cpu']:.2f} s, peak RSS {result['main_rss_mb']:.0f} MB "
                    f"+ prover {result['prover_rss_mb']:.0f} MB, accepted {result['accepted']} "
                    f"({result['bulk']} bulk), load {load:.1f} -> {os.getloadavg()[0]:.1f}",
                    flush=True,
                )
                shutil.rmtree(home)
    if len(digests) != 1:
        print(f"FAIL: the prover counts stored different rows ({len(digests)} digests)")
        return 1
    print("same stored rows for every prover count")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
