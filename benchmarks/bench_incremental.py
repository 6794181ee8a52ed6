"""One new release on a copy of an existing warehouse: wall and CPU time of ``litmus run``.

``bench_end_to_end.py`` builds its warehouse from scratch every time (minutes at 250,000
trajectories). To compare the incremental case before and after a change, build a home once
(``bench_end_to_end.py --work DIR --keep`` leaves one in ``DIR/home``; copy it aside), then
run this as often as needed: it copies that home once to ``--at``, then each repeat lands a
new 4,000-trajectory release of one lineage there (a release date the home has not seen)
and runs ``litmus run`` as a child process, reporting its wall time, its CPU time (user+sys
of the child tree, which the machine's load inflates far less than wall time), the load
average beside it, and the step breakdown.

dbt parses the whole project again when its profile changed, and the profile holds the
warehouse's path: a copy at another path pays that on its first build. So pass ``--at`` the
path the base was built at (its copy is replaced), and discard the first repeat when the
base was last published by other code.

    .venv/bin/python benchmarks/bench_incremental.py --home DIR/base --at DIR/home [--repeats 2]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_end_to_end import print_steps, step_breakdown

from litmus.settings import litmus_paths

INCREMENTAL_TRAJECTORIES = 4_000


def new_release(source: Path, target: Path, release: str, n_records: int) -> int:
    import json

    written = 0
    with source.open(encoding="utf-8") as read, target.open("w", encoding="utf-8") as write:
        for line in read:
            if written == n_records:
                break
            record = json.loads(line)
            record["config"]["model_release"] = release
            record["run_id"] = f"{record['run_id']}-{release}"
            write.write(json.dumps(record, separators=(",", ":"), ensure_ascii=False) + "\n")
            written += 1
    return written


def timed_run(command: list[str], env: dict[str, str]) -> tuple[float, float, float, str]:
    """Wall seconds, CPU seconds (user+sys of the child tree), peak RSS MB, output."""
    started = time.perf_counter()
    child = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True
    )
    assert child.stdout is not None
    output = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        sys.stderr.write(output[-4000:])
        raise SystemExit(f"{command[:4]} failed")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, output


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", required=True, type=Path, help="a home after a full run")
    parser.add_argument(
        "--at", type=Path, help="where the copy goes (replaced; default: a temporary folder)"
    )
    parser.add_argument("--repeats", type=int, default=1, help="releases landed one after another")
    parser.add_argument("--no-op", action="store_true", help="also time a run with nothing new")
    args = parser.parse_args()

    base = args.home.resolve()
    landed = sorted((base / "landing").glob("aurora_2026-11-01*.jsonl"))
    if not landed:
        raise SystemExit(f"{base}/landing has no aurora_2026-11-01 run file to derive from")
    work = Path(tempfile.mkdtemp(prefix="litmus-bench-incr-"))
    home = (args.at or work / "home").resolve()
    shutil.rmtree(home, ignore_errors=True)
    shutil.copytree(base, home, symlinks=True)
    paths = litmus_paths(home)
    env = {**os.environ, "LITMUS_HOME": str(home)}
    command = [sys.executable, "-m", "litmus_dagster.cli", "--home", str(home), "run"]
    try:
        for repeat in range(args.repeats):
            release = f"2027-03-{repeat + 1:02d}"
            target = paths.landing / f"aurora_{release}_react-2.3_bare.jsonl"
            written = new_release(
                landed[0], work / "release.jsonl", release, INCREMENTAL_TRAJECTORIES
            )
            shutil.move(work / "release.jsonl", target)
            since = time.time()
            load_before = load()
            wall, cpu, rss, _ = timed_run(command, env)
            print(
                f"release {release} ({written:,} trajectories): {wall:.1f} s wall, {cpu:.1f} s "
                f"CPU, peak RSS {rss:,.0f} MB; load {load_before} -> {load()}"
            )
            print_steps("steps", step_breakdown(paths, since), limit=30)
        if args.no_op:
            load_before = load()
            wall, cpu, _, output = timed_run(command, env)
            said = "nothing new since the last run" in output
            print(
                f"nothing new: {wall:.2f} s wall, {cpu:.2f} s CPU, says so: {said}; "
                f"load {load_before} -> {load()}"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
