"""Benchmark of record: landing folder → published board, against DuckDB's own read.

Generates N trajectories (default 1,000,000) with the sample generator as landing files in a
fresh state folder, then, each in its own child process of this one (same process tree,
same machine load):

1. the floor: DuckDB ``read_json`` of the same files, trajectories and their steps
   materialized into a DuckDB file;
2. the full ``litmus run`` (ingest → label → audit → gates → dbt → intervals → board);
3. the incremental case: one new 4,000-trajectory release of an existing lineage landed
   on top, then ``litmus run``;
4. a ``litmus run`` with nothing new.

Then the full run and the new release once more on a tiny warehouse (default 1,000
trajectories, ``--fixed-cost-trajectories``): their cost there is the fixed cost of a run
(interpreter and imports, one Dagster run per configuration, dbt, Great Expectations), which
no speed-up of the data-proportional work removes, set against what each target leaves for the
whole run at the main size.

Prints the wall times, the ratios (full / floor, incremental / full), the fixed costs against
the targets' budgets, the step breakdown of the runs (summed from Dagster's step stats in the
run history) and the peak RSS of each child process tree's largest process.

    .venv/bin/python benchmarks/bench_end_to_end.py [--trajectories 1000000] [--work DIR]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from litmus.sample import generate_sample
from litmus.settings import LitmusPaths, litmus_paths

# The sample writes one run file per profile, each holding every family in all four splits.
PROFILES = 8
SPLITS = 4
INCREMENTAL_TRAJECTORIES = 4_000
INCREMENTAL_RELEASE = "2027-01-15"
# Targets of issue 16.
TARGET_FULL_OVER_FLOOR = 3.0
TARGET_INCREMENTAL_SHARE = 0.02
TARGET_NO_OP_S = 3.0
TARGET_PEAK_RSS_GB = 2.0
# The second, tiny run: the fixed cost of a run, which no data-proportional speed-up removes.
FIXED_COST_TRAJECTORIES = 1_000
# What a scoring `litmus run` imports before or during its steps (the pipeline, then Great
# Expectations in the gates step), timed alone in a fresh interpreter.
RUN_IMPORTS = "import litmus_dagster.pipeline, great_expectations"

FLOOR_SCRIPT = """
import sys, duckdb
con = duckdb.connect(sys.argv[1])
con.execute("SET enable_progress_bar = false")
con.execute("SET preserve_insertion_order = false")
con.execute(
    "CREATE TABLE trajectories AS SELECT * FROM read_json(?, format = 'newline_delimited', "
    "filename = true, maximum_object_size = 67108864)",
    [sys.argv[2]],
)
con.execute(
    "CREATE TABLE steps AS SELECT filename, run_id, instance_id, epoch, "
    "unnest(steps, max_depth := 2) FROM trajectories"
)
print(con.execute("SELECT count(*) FROM trajectories").fetchone()[0],
      con.execute("SELECT count(*) FROM steps").fetchone()[0])
"""


@dataclass
class Measured:
    wall_s: float
    peak_rss_mb: float
    output: str


def run_child(command: list[str], env: dict[str, str] | None = None) -> Measured:
    """Run one child process; its wall time and the peak RSS of its largest process."""
    started = time.perf_counter()
    child = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True
    )
    assert child.stdout is not None
    output = child.stdout.read()
    # wait4 reports the child's own usage, its reaped descendants included (ru_maxrss: the
    # largest single process, in KiB on Linux)
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - started
    if child.returncode != 0:
        sys.stderr.write(output[-4000:])
        raise SystemExit(f"{command[:3]} failed with exit code {child.returncode}")
    return Measured(wall, usage.ru_maxrss / 1024, output)


def step_breakdown(paths: LitmusPaths, since: float) -> dict[str, float]:
    """Seconds per step (summed over partitions and runs) of the runs started after ``since``."""
    from litmus_dagster.pipeline import local_instance

    instance = local_instance(paths)
    totals: collections.Counter[str] = collections.Counter()
    for record in instance.get_run_records():
        if record.start_time is None or record.start_time < since:
            continue
        for stat in instance.get_run_step_stats(record.dagster_run.run_id):
            if stat.start_time and stat.end_time:
                step = stat.step_key.split("[")[0]
                totals[step] += stat.end_time - stat.start_time
    return dict(totals.most_common())


def new_release_file(
    source: Path, target: Path, n_records: int, release: str = INCREMENTAL_RELEASE
) -> int:
    """The first ``n_records`` of one lineage's run file as a new model release."""
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


def litmus_command(paths: LitmusPaths, *args: str) -> list[str]:
    return [sys.executable, "-m", "litmus_dagster.cli", "--home", str(paths.home), *args]


def print_steps(title: str, steps: dict[str, float], limit: int = 14) -> None:
    print(f"\n{title} (Dagster step durations, summed over partitions):")
    shown = list(steps.items())[:limit]
    for step, seconds in shown:
        print(f"  {step:<48} {seconds:8.1f} s")
    rest = sum(list(steps.values())[limit:])
    if rest:
        print(f"  {'the rest':<48} {rest:8.1f} s")
    print(f"  {'sum of steps':<48} {sum(steps.values()):8.1f} s")


def _met(condition: bool) -> str:
    return "yes" if condition else "no"


@dataclass
class Scenario:
    """One size's runs, each in a child process: the full run, one new release on top, and
    (at the benchmark's own size) the floor and a run with nothing new."""

    n_trajectories: int
    n_families: int
    full: Measured
    full_steps: dict[str, float]
    release_trajectories: int
    incremental: Measured
    incremental_steps: dict[str, float]
    floor: Measured | None = None
    no_op: Measured | None = None


def measure(work: Path, n_trajectories: int, *, with_floor_and_no_op: bool) -> Scenario:
    """Generate ``n_trajectories`` as landing files in a fresh home under ``work`` and run the
    benchmark's procedure on them."""
    n_families = max(1, round(n_trajectories / (PROFILES * SPLITS)))
    shutil.rmtree(work / "home", ignore_errors=True)
    paths = litmus_paths(work / "home").ensure()
    env = {**os.environ, "LITMUS_HOME": str(paths.home)}
    started = time.perf_counter()
    manifest = generate_sample(work / "generated", n_families=n_families)
    generated_s = time.perf_counter() - started
    shutil.copyfile(manifest.suite_path, paths.suites / manifest.suite_path.name)
    for run_path in manifest.run_paths.values():
        shutil.copyfile(run_path, paths.landing / run_path.name)
    landed = sorted(paths.landing.glob("*.jsonl"))
    size_mb = sum(p.stat().st_size for p in landed) / 1e6
    print(
        f"{manifest.n_trajectories:,} trajectories in {len(landed)} landing files, "
        f"{size_mb:,.0f} MB; suite of {n_families:,} families "
        f"({n_families * SPLITS:,} instances); generated in {generated_s:.0f} s"
    )
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")

    floor = None
    if with_floor_and_no_op:
        floor_db = work / "floor.duckdb"
        floor_db.unlink(missing_ok=True)
        floor = run_child(
            [sys.executable, "-c", FLOOR_SCRIPT, str(floor_db), str(paths.landing / "*.jsonl")]
        )
        floor_db.unlink(missing_ok=True)
        print(
            f"floor (DuckDB read_json, trajectories and steps): {floor.wall_s:.1f} s, "
            f"rows {floor.output.strip()}, peak RSS {floor.peak_rss_mb:,.0f} MB"
        )

    full_since = time.time()
    full = run_child(litmus_command(paths, "run"), env)
    full_steps = step_breakdown(paths, full_since)

    source = next(p for p in landed if p.name.startswith("aurora_2026-11-01"))
    incremental_file = paths.landing / f"aurora_{INCREMENTAL_RELEASE}_react-2.3_bare.jsonl"
    written = new_release_file(source, work / "release.jsonl", INCREMENTAL_TRAJECTORIES)
    shutil.move(work / "release.jsonl", incremental_file)
    incremental_since = time.time()
    incremental = run_child(litmus_command(paths, "run"), env)
    incremental_steps = step_breakdown(paths, incremental_since)

    no_op = run_child(litmus_command(paths, "run"), env) if with_floor_and_no_op else None
    return Scenario(
        manifest.n_trajectories,
        n_families,
        full,
        full_steps,
        written,
        incremental,
        incremental_steps,
        floor,
        no_op,
    )


def print_targets(main: Scenario) -> None:
    assert main.floor is not None and main.no_op is not None
    floor, full, incremental, no_op = main.floor, main.full, main.incremental, main.no_op
    said_so = "nothing new since the last run" in no_op.output
    ratio = full.wall_s / floor.wall_s
    share = incremental.wall_s / full.wall_s
    peak_gb = max(full.peak_rss_mb, incremental.peak_rss_mb) / 1024
    print("\n| measurement | seconds | ratio | target | met |")
    print("|---|---|---|---|---|")
    print(f"| DuckDB floor | {floor.wall_s:.1f} | 1.0 | | |")
    print(
        f"| full `litmus run` | {full.wall_s:.1f} | {ratio:.1f}x floor | "
        f"<= {TARGET_FULL_OVER_FLOOR:g}x | {_met(ratio <= TARGET_FULL_OVER_FLOOR)} |"
    )
    print(
        f"| new release ({main.release_trajectories:,} trajectories) | "
        f"{incremental.wall_s:.1f} | {share:.1%} of full | <= {TARGET_INCREMENTAL_SHARE:.0%} | "
        f"{_met(share <= TARGET_INCREMENTAL_SHARE)} |"
    )
    print(
        f"| run with nothing new | {no_op.wall_s:.1f} | says so: {said_so} | "
        f"<= {TARGET_NO_OP_S:g} s | {_met(said_so and no_op.wall_s <= TARGET_NO_OP_S)} |"
    )
    print(
        f"| peak RSS (largest process) | full {full.peak_rss_mb:,.0f} MB, incremental "
        f"{incremental.peak_rss_mb:,.0f} MB, floor {floor.peak_rss_mb:,.0f} MB | | "
        f"<= {TARGET_PEAK_RSS_GB:g} GB | {_met(peak_gb <= TARGET_PEAK_RSS_GB)} |"
    )


def print_fixed_cost(main: Scenario, tiny: Scenario, imports: Measured) -> None:
    """What the same runs cost on a warehouse of a few hundred trajectories per configuration
    (start-up, one Dagster run per configuration, dbt, Great Expectations: work that does not
    shrink with the data), against what each target leaves for a whole run at the main size."""
    assert main.floor is not None
    full_budget = TARGET_FULL_OVER_FLOOR * main.floor.wall_s
    release_budget = TARGET_INCREMENTAL_SHARE * main.full.wall_s
    release_budget_at_target = TARGET_INCREMENTAL_SHARE * full_budget
    print(
        f"\nfixed cost: the same runs on {tiny.n_trajectories:,} trajectories "
        f"({tiny.n_families:,} families), against the targets at "
        f"{main.n_trajectories:,} trajectories"
    )
    print("\n| run | seconds | the target's whole budget | fixed cost / budget |")
    print("|---|---|---|---|")
    print(
        f"| full `litmus run` | {tiny.full.wall_s:.1f} | {full_budget:.1f} s "
        f"({TARGET_FULL_OVER_FLOOR:g}x the floor) | {tiny.full.wall_s / full_budget:.0%} |"
    )
    print(
        f"| new release ({tiny.release_trajectories:,} trajectories) | "
        f"{tiny.incremental.wall_s:.1f} | {release_budget:.2f} s "
        f"({TARGET_INCREMENTAL_SHARE:.0%} of the full run measured) | "
        f"{tiny.incremental.wall_s / release_budget:.0%} |"
    )
    print(
        f"| new release, if the full run met its target | {tiny.incremental.wall_s:.1f} | "
        f"{release_budget_at_target:.2f} s ({TARGET_INCREMENTAL_SHARE:.0%} of "
        f"{full_budget:.1f} s) | {tiny.incremental.wall_s / release_budget_at_target:.0%} |"
    )
    in_steps = sum(tiny.incremental_steps.values())
    print(
        f"\nthe tiny new release: {in_steps:.1f} s in Dagster steps (dbt "
        f"{tiny.incremental_steps.get('litmus_dbt_metrics', 0.0):.1f} s, gates "
        f"{tiny.incremental_steps.get('publication_gates', 0.0):.1f} s), "
        f"{tiny.incremental.wall_s - in_steps:.1f} s outside them (interpreter, imports, "
        f"planning, run bookkeeping); importing what a run imports, alone in a fresh "
        f"interpreter: {imports.wall_s:.1f} s"
    )
    print_steps(
        f"fixed cost of a new release ({tiny.n_trajectories:,} trajectories)",
        tiny.incremental_steps,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trajectories", type=int, default=1_000_000)
    parser.add_argument(
        "--fixed-cost-trajectories",
        type=int,
        default=FIXED_COST_TRAJECTORIES,
        help="size of the second, tiny run that measures the fixed cost (0: skip it)",
    )
    parser.add_argument("--work", help="folder for the state (default: a temporary one)")
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    args = parser.parse_args()

    work = Path(args.work or tempfile.mkdtemp(prefix="litmus-bench-e2e-"))
    try:
        main_runs = measure(work, args.trajectories, with_floor_and_no_op=True)
        # the tiny runs and the imports alone, or nothing when the fixed cost is skipped
        fixed_cost = (
            (
                measure(
                    work / "fixed-cost", args.fixed_cost_trajectories, with_floor_and_no_op=False
                ),
                run_child([sys.executable, "-c", RUN_IMPORTS]),
            )
            if args.fixed_cost_trajectories
            else None
        )
        print(f"\nload average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        print_targets(main_runs)
        if fixed_cost is not None:
            print_fixed_cost(main_runs, *fixed_cost)
        print_steps(f"full run, {main_runs.n_trajectories:,} trajectories", main_runs.full_steps)
        print_steps(
            f"new release, {main_runs.release_trajectories:,} trajectories",
            main_runs.incremental_steps,
        )
    finally:
        if not args.keep and not args.work:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
