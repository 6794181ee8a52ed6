"""Which step of ``litmus run`` holds the memory: the RSS of each step, from one run.

Runs ``litmus run`` on an existing home as a child process, samples the resident memory of
the child (and of its own children: dbt, forked workers, git) every 50 ms, and afterwards
matches the samples to the step windows of Dagster's step stats. Steps run in-process one
after another, so a step's peak is the process's peak inside its window and its growth is
that peak less the RSS when the step started. Use it on copies of one ingested home (first
``LITMUS_CRASH_AT=pipeline.ingested litmus run``, then copy the home once per measurement)
to see what happens after ingestion, at two sizes to see what grows.

    .venv/bin/python benchmarks/bench_step_memory.py HOME [--python PYTHON]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from litmus.settings import litmus_paths

SAMPLE_INTERVAL_S = 0.05
MB = 2**20


@dataclass
class StepMemory:
    peak: int = 0
    growth: int = 0
    child_peak: int = 0
    seconds: float = 0.0


@dataclass
class Samples:
    """(time, RSS of the process, largest RSS among its descendants)."""

    rows: list[tuple[float, int, int]] = field(default_factory=list)
    stopped: bool = False


def sample(pid: int, samples: Samples) -> None:
    process = psutil.Process(pid)
    while not samples.stopped:
        try:
            children = [child.memory_info().rss for child in process.children(recursive=True)]
            samples.rows.append((time.time(), process.memory_info().rss, max(children, default=0)))
        except psutil.Error:
            pass
        time.sleep(SAMPLE_INTERVAL_S)


def step_windows(home: Path, since: float) -> list[tuple[float, float, str]]:
    from litmus_dagster.pipeline import local_instance

    instance = local_instance(litmus_paths(home))
    windows = []
    for record in instance.get_run_records():
        if record.start_time is None or record.start_time < since:
            continue
        for stat in instance.get_run_step_stats(record.dagster_run.run_id):
            if stat.start_time and stat.end_time:
                windows.append((stat.start_time, stat.end_time, stat.step_key.split("[")[0]))
    return windows


def per_step(
    samples: list[tuple[float, int, int]], windows: list[tuple[float, float, str]]
) -> dict[str, StepMemory]:
    steps: defaultdict[str, StepMemory] = defaultdict(StepMemory)
    for start, end, step in windows:
        inside = [row for row in samples if start <= row[0] <= end]
        if not inside:
            continue
        before = [row[1] for row in samples if row[0] < start]
        peak = max(row[1] for row in inside)
        memory = steps[step]
        memory.peak = max(memory.peak, peak)
        memory.growth = max(memory.growth, peak - (before[-1] if before else 0))
        memory.child_peak = max(memory.child_peak, max(row[2] for row in inside))
        memory.seconds += end - start
    return dict(steps)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("home", type=Path)
    parser.add_argument("--python", default=sys.executable, help="the interpreter to run")
    args = parser.parse_args()

    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    since = time.time()
    child = subprocess.Popen(
        [args.python, "-m", "litmus_dagster.cli", "--home", str(args.home), "run"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ, "LITMUS_HOME": str(args.home)},
        text=True,
    )
    samples = Samples()
    sampler = threading.Thread(target=sample, args=(child.pid, samples), daemon=True)
    sampler.start()
    assert child.stdout is not None
    output = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    samples.stopped = True
    sampler.join()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.stderr.write(output[-4000:])
        raise SystemExit("litmus run failed")
    windows = step_windows(args.home, since)
    first_step = min((start for start, _, _ in windows), default=time.time())
    before_steps = [row[1] for row in samples.rows if row[0] < first_step]
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"peak RSS (wait4, largest process): {usage.ru_maxrss * 1024 / MB:,.0f} MB")
    print(f"peak RSS before the first step: {max(before_steps, default=0) / MB:,.0f} MB")
    print("\n| step | peak MB | growth in step MB | largest child MB | seconds |")
    print("|---|---|---|---|---|")
    steps = sorted(per_step(samples.rows, windows).items(), key=lambda item: -item[1].peak)
    for step, memory in steps:
        print(
            f"| {step} | {memory.peak / MB:,.0f} | {memory.growth / MB:,.0f} | "
            f"{memory.child_peak / MB:,.0f} | {memory.seconds:.1f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
