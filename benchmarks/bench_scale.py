"""Scale: configurations scored by 1, 2 and 4 parallel run processes of the team deployment,
and the embedded `litmus run` at a large size with its peak memory.

``--workers 1 2 4`` (default): for each count, a fresh state folder with the sample's nine
configurations (``--families`` families each, four splits) landed at once, the team instance
(deploy/team/dagster.yaml with ``max_concurrent_runs`` set to the count) on a real PostgreSQL
server (tests/postgres_server.py), a code server and ``dagster-daemon run`` as processes
(tests/team_deployment.py). The landing sensor requests one run per configuration; timed is
the batch, from the first run enqueued to the last scoring run's end (the sensor's 30 s
settling and the publication after it are printed apart). Where the time goes comes from
Dagster's events: per run, the queue wait, the process start (code location loaded) and each
step; summed over runs. The warehouse is whatever the environment configures (the embedded
file by default); ``--lake`` gives each batch a new lake instead (DuckLake, its catalog a
database of the same PostgreSQL server, its Parquet files in the batch's folder), so one
command measures the worker counts on the lake side by side.

``--embedded N``: N trajectories (rounded up to whole copies of a generated base sample of
``--base-families`` families, benchmarks/replicated_sample.py), then one ``litmus run`` (ingest
→ label → audit → gates → dbt → board) in a child process on the embedded default; its wall
time, peak RSS (the largest process of its tree from the kernel's accounting, and the tree's
sum sampled each second), rows accepted and quarantined, labels, and per step time from the
run history.

    .venv/bin/python benchmarks/bench_scale.py [--workers 1 2 4] [--families 60] [--lake]
    .venv/bin/python benchmarks/bench_scale.py --embedded 1000000 [--base-families 3000] \
        [--work DIR]
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import itertools
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "benchmarks"))

import dagster as dg  # noqa: E402
from lake_world import new_lake  # noqa: E402
from postgres_server import PostgresServer, postgres_server  # noqa: E402
from replicated_sample import write_replicated_sample  # noqa: E402
from team_deployment import (  # noqa: E402
    FINISHED,
    psycopg2_url,
    run_event_times,
    step_windows,
    team_deployment,
    team_instance_yaml,
    wait_for,
)

from litmus.runs import stage_sample  # noqa: E402
from litmus.sample import generate_sample  # noqa: E402
from litmus.settings import litmus_paths  # noqa: E402

SPLITS = 4
BATCH_TIMEOUT_S = 3600


def _generate(work: Path, n_families: int):
    paths = litmus_paths(work / "home").ensure()
    manifest = generate_sample(work / "generated", n_families=n_families)
    stage_sample(paths, manifest)
    return paths, manifest


def bench_workers(counts: list[int], n_families: int, work: Path, *, lake: bool) -> None:
    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"warehouse: {'a new lake per batch' if lake else 'as the environment configures'}")
    with postgres_server(databases=()) as server:
        rows = [
            _one_batch(server, count, n_families, work / f"workers{count}", lake=lake)
            for count in counts
        ]
    print("\n| workers | trajectories | batch wall s | trajectories/s | runs at once (max) |")
    print("|---|---|---|---|---|")
    for row in rows:
        print("| {workers} | {trajectories:,} | {wall:.1f} | {rate:.0f} | {peak} |".format(**row))


def _one_batch(
    server: PostgresServer, count: int, n_families: int, work: Path, *, lake: bool
) -> dict:
    paths, manifest = _generate(work, n_families)
    database = f"dagster_w{count}"
    server.create_database(database)
    url = psycopg2_url(server.dsn(database))
    yaml_text = team_instance_yaml(max_concurrent_runs=count)
    env = new_lake(server, work) if lake else {}
    with team_deployment(paths, url, work / "logs", instance_yaml=yaml_text, env=env) as deployment:
        instance = deployment.instance
        servers = list(deployment.processes)
        expected = len(manifest.run_paths)

        def finished(job_name: str, n: int) -> list[dg.RunRecord] | None:
            records = instance.get_run_records(filters=dg.RunsFilter(job_name=job_name))
            done = len(records) >= n and all(r.dagster_run.status in FINISHED for r in records)
            return records if done else None

        print(f"\n{count} worker(s): {manifest.n_trajectories:,} trajectories, "
              f"{expected} configurations landed", flush=True)  # fmt: skip
        runs = wait_for(
            lambda: finished("land_and_score_configuration", expected),
            BATCH_TIMEOUT_S, "the scoring runs", servers, poll_s=1,
        )  # fmt: skip
        publication = wait_for(
            lambda: finished("publish_leaderboard", 1), BATCH_TIMEOUT_S, "the publication", servers
        )[0]
        return _report(instance, count, manifest.n_trajectories, runs, publication)


def _report(
    instance: dg.DagsterInstance,
    count: int,
    n_trajectories: int,
    runs: list[dg.RunRecord],
    publication: dg.RunRecord,
) -> dict:
    times = {r.dagster_run.run_id: run_event_times(instance, r.dagster_run.run_id) for r in runs}
    enqueued = min(t.get("PIPELINE_ENQUEUED", math.inf) for t in times.values())
    ended = max(r.end_time or 0 for r in runs)
    phases: collections.Counter[str] = collections.Counter()
    for run_times in times.values():
        launched = run_times.get("PIPELINE_DEQUEUED", run_times.get("PIPELINE_STARTING", 0))
        phases["queue wait"] += launched - run_times.get("PIPELINE_ENQUEUED", launched)
        phases["process start, code loaded"] += run_times.get("PIPELINE_START", launched) - launched
    windows = step_windows(instance, list(times))
    for window in windows:
        phases[f"step {window.step_key}"] += window.end - window.start
    # how many runs were in progress at once, at most (from their start and end events)
    edges = sorted(
        [(t["PIPELINE_START"], 1) for t in times.values() if "PIPELINE_START" in t]
        + [(r.end_time, -1) for r in runs if r.end_time]
    )
    peak = max(itertools.accumulate(delta for _, delta in edges), default=0)
    wall = ended - enqueued
    publishing = (publication.end_time or 0) - (publication.start_time or 0)
    print(f"  batch: {wall:.1f} s wall ({n_trajectories / wall:.0f} trajectories/s); "
          f"publication after it: {publishing:.1f} s")  # fmt: skip
    print("  summed over the runs (s):")
    for phase, seconds in sorted(phases.items(), key=lambda item: -item[1]):
        print(f"    {phase:<40} {seconds:8.1f}")
    return {
        "workers": count,
        "trajectories": n_trajectories,
        "wall": wall,
        "rate": n_trajectories / wall,
        "peak": peak,
    }


def bench_embedded(n_trajectories: int, work: Path, base_families: int) -> None:
    paths = litmus_paths(work / "embedded" / "home").ensure()
    started = time.perf_counter()
    sample = write_replicated_sample(
        paths.suites, paths.landing, n_trajectories, base_families=base_families,
        work=work / "embedded",
    )  # fmt: skip
    generated_s = time.perf_counter() - started
    print(f"generated {sample.n_trajectories:,} trajectories ({sample.replicas} replicas of "
          f"{sample.base_trajectories:,}) in {generated_s:.0f} s", flush=True)  # fmt: skip
    env = {**os.environ, "LITMUS_HOME": str(paths.home), "DAGSTER_HOME": ""}
    env.pop("LITMUS_DUCKDB_PATH", None)
    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", flush=True)
    started = time.perf_counter()
    run = subprocess.Popen([str(REPO / ".venv" / "bin" / "litmus"), "run"], env=env)
    peaks = _sample_tree_rss(run)
    wall = time.perf_counter() - started
    if run.returncode:
        raise SystemExit(f"litmus run failed (exit code {run.returncode}) after {wall:.0f} s")
    # the largest process of the run's tree, from the kernel's accounting (the generator above
    # ran in this process, so it is not counted)
    largest_gb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024**2
    size_gb = paths.duckdb_path.stat().st_size / 1024**3
    print(f"\nembedded litmus run, {sample.n_trajectories:,} trajectories: {wall:.0f} s wall, "
          f"peak RSS {largest_gb:.2f} GB (largest process), {peaks.tree_gb:.2f} GB (its whole "
          f"tree at once, sampled every {RSS_SAMPLE_S} s), warehouse {size_gb:.2f} GB")  # fmt: skip
    _print_warehouse_counts(paths.duckdb_path)
    from litmus_dagster.executor import local_instance

    instance = local_instance(paths)
    steps: collections.Counter[str] = collections.Counter()
    for record in instance.get_run_records():
        for window in step_windows(instance, [record.dagster_run.run_id]):
            steps[window.step_key] += window.end - window.start
    print(f"  step time summed over the runs (s; {len(sample.run_paths)} configurations):")
    for step, seconds in sorted(steps.items(), key=lambda item: -item[1]):
        print(f"    {step:<40} {seconds:8.1f}")
    instance.dispose()


RSS_SAMPLE_S = 1.0


@dataclass
class _TreePeaks:
    tree_gb: float = 0.0


def _sample_tree_rss(run: subprocess.Popen) -> _TreePeaks:
    """Wait for ``run``, sampling the summed RSS of it and its descendants; progress every
    minute (elapsed, RSS now, peak so far)."""
    peaks = _TreePeaks()
    root = psutil.Process(run.pid)
    started = time.monotonic()
    last_report = started
    while run.poll() is None:
        total = 0
        for process in [root, *_descendants(root)]:
            with contextlib.suppress(psutil.Error):
                total += process.memory_info().rss
        peaks.tree_gb = max(peaks.tree_gb, total / 1024**3)
        if time.monotonic() - last_report >= 60:
            last_report = time.monotonic()
            print(f"  [{last_report - started:6.0f} s] tree RSS {total / 1024**3:.2f} GB, "
                  f"peak {peaks.tree_gb:.2f} GB", flush=True)  # fmt: skip
        time.sleep(RSS_SAMPLE_S)
    return peaks


def _descendants(root: psutil.Process) -> list[psutil.Process]:
    try:
        return root.children(recursive=True)
    except psutil.Error:
        return []


def _print_warehouse_counts(duckdb_path: Path) -> None:
    import duckdb

    with duckdb.connect(str(duckdb_path), read_only=True) as con:
        stored = con.execute("SELECT count(*) FROM raw_trajectories").fetchone()[0]
        quarantined = con.execute("SELECT count(*) FROM quarantine").fetchone()[0]
        labels = con.execute(
            "SELECT label, count(*) FROM trajectory_labels GROUP BY label ORDER BY label"
        ).fetchall()
    print(f"  rows accepted {stored:,}, quarantined {quarantined:,}; labels: "
          + ", ".join(f"{label} {n:,}" for label, n in labels))  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--families", type=int, default=60)
    parser.add_argument("--embedded", type=int, metavar="N", help="trajectories (embedded run)")
    parser.add_argument("--lake", action="store_true", help="each batch on a new lake")
    parser.add_argument(
        "--base-families", type=int, default=3000,
        help="families generated once, then copied up to N (benchmarks/replicated_sample.py)",
    )  # fmt: skip
    parser.add_argument("--work", type=Path, help="folder to work in (default: a temporary one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="litmus-scale-") as scratch:
        work = args.work or Path(scratch)
        if args.embedded:
            bench_embedded(args.embedded, work, args.base_families)
        else:
            bench_workers(args.workers, args.families, work, lake=args.lake)


if __name__ == "__main__":
    main()
