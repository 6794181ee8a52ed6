"""The lake against the embedded file: one `litmus run` (ingest → label → gates → dbt → board)
of the same synthetic corpus into each, in child processes of this one, with the wall time,
CPU time and peak RSS of each and their ratios.

The lake is a throwaway PostgreSQL (tests/postgres_server.py: initdb in a temporary folder, as
the `postgres` user when run as root, 127.0.0.1 at a free port, stopped by PID at the end)
with its Parquet files in the work folder.

    .venv/bin/python benchmarks/bench_lake.py [--families 60] [--work DIR]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from postgres_server import postgres_server  # noqa: E402

from litmus.sample import generate_sample  # noqa: E402
from litmus.settings import litmus_paths  # noqa: E402

LITMUS = Path(sys.executable).with_name("litmus")


def stage(home: Path, suite: Path, runs: list[Path]) -> None:
    paths = litmus_paths(home).ensure()
    shutil.copyfile(suite, paths.suites / suite.name)
    for run_file in runs:
        shutil.copyfile(run_file, paths.landing / run_file.name)


def timed_run(home: Path, env: dict[str, str]) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds and peak RSS (GB) of one `litmus run` (its process tree's
    largest process: RUSAGE_CHILDREN's maximum)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    done = subprocess.run(
        [str(LITMUS), "--home", str(home), "run"],
        env={**os.environ, "LITMUS_HOME": str(home), **env},
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"litmus run failed in {home}:\n{done.stderr[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, after.ru_maxrss / 1024 / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--families", type=int, default=60, help="sample families (size)")
    parser.add_argument("--work", type=Path, help="work folder (default: a temporary one)")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-lake-"))
    manifest = generate_sample(work / "generated", n_families=args.families)
    runs = sorted(manifest.run_paths.values())
    print(f"corpus: {manifest.n_trajectories:,} trajectories in {len(runs)} run files ({work})")
    for name in ("embedded", "lake"):
        stage(work / name, manifest.suite_path, runs)
    embedded = timed_run(work / "embedded", {"LITMUS_WAREHOUSE": "embedded"})
    with postgres_server(databases=("bench_lake",)) as server:
        lake_env = {
            "LITMUS_WAREHOUSE": "ducklake:postgres:" + server.libpq("bench_lake"),
            "LITMUS_LAKE_DATA_PATH": str(work / "lake-data"),
        }
        lake = timed_run(work / "lake", lake_env)
    print(f"{'':10} {'wall s':>8} {'CPU s':>8} {'peak RSS GB':>12}")
    for name, (wall, cpu, rss) in (("embedded", embedded), ("lake", lake)):
        print(f"{name:10} {wall:8.1f} {cpu:8.1f} {rss:12.2f}")
    print(
        f"lake / embedded: wall {lake[0] / embedded[0]:.2f}x, CPU {lake[1] / embedded[1]:.2f}x"
    )


if __name__ == "__main__":
    main()
