"""The step breakdown of one more new release on a copy of a built home.

    .venv/bin/python benchmarks/bench_new_release_steps.py HOME COPY [--release 2027-03-01]

Copies the state folder ``HOME`` (one ``bench_end_to_end.py --work DIR --keep`` left, say) to
``COPY``, lands a 4,000-trajectory release of the aurora lineage as ``bench_end_to_end.py``
does (a new model release; ``--release`` picks its date, so one home gives several), runs
``litmus run`` once in a child process and prints its wall time, CPU time (user + sys of the
child tree) and the Dagster step durations. The child imports what this process would, so
``PYTHONPATH=OTHER_CHECKOUT`` times another code on an identical copy.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

from bench_end_to_end import (
    INCREMENTAL_TRAJECTORIES,
    new_release_file,
    print_steps,
    step_breakdown,
)

from litmus.settings import litmus_paths


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("home", type=Path)
    parser.add_argument("copy", type=Path)
    parser.add_argument("--release", default="2027-03-01")
    args = parser.parse_args()
    shutil.rmtree(args.copy, ignore_errors=True)
    shutil.copytree(args.home, args.copy)
    paths = litmus_paths(args.copy)
    source = paths.landing / "aurora_2026-11-01_react-2.3_bare.jsonl"
    target = paths.landing / f"aurora_{args.release}_react-2.3_bare.jsonl"
    new_release_file(source, target, INCREMENTAL_TRAJECTORIES, args.release)
    env = {**os.environ, "LITMUS_HOME": str(paths.home)}
    command = [sys.executable, "-m", "litmus_dagster.cli", "--home", str(paths.home), "run"]
    since = time.time()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    # not from a checkout: `-m` puts the working folder before PYTHONPATH on sys.path
    result = subprocess.run(command, env=env, capture_output=True, text=True, cwd=paths.home)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if result.returncode != 0:
        print(result.stdout[-3000:], result.stderr[-3000:])
        return result.returncode
    print(
        f"new release {args.release}: {wall:.1f} s wall, {cpu:.1f} s CPU; "
        f"load {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    print_steps(f"new release {args.release}", step_breakdown(paths, since), limit=20)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
