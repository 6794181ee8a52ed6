"""Benchmark: CPU time of ``litmus audit load`` (a real load, ``--help``, a usage error).

Builds a small labeled warehouse through the domain code (the audit tests' ``gates_world``),
fills in one verdict of its audit queue, then runs each command in a fresh interpreter,
``--repeats`` times, each real load on its own copy of the home (a file loaded before is
skipped). Reports the median user+sys CPU seconds of the child and whether it imported
Dagster, with the load average beside the figures.

    .venv/bin/python benchmarks/bench_audit_load_cli.py [--repeats 5] [--workdir DIR]

Figures vary by machine; nothing here asserts on them.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# Runs the CLI and says whether Dagster was imported (printed last, on stdout).
CHILD = """
import json, sys
from litmus_dagster.cli import main
try:
    status = main(sys.argv[1:])
except SystemExit as exit:
    status = exit.code
print(json.dumps({"status": status, "dagster": "dagster" in sys.modules}))
"""


def build_home(workdir: Path) -> tuple[Path, Path]:
    """A labeled warehouse and a verdict file deciding one queued row."""
    sys.path.insert(0, str(REPO / "tests"))
    from gates_world import build_warehouse

    from litmus.audit.workflow import export_audit_queue
    from litmus.settings import litmus_paths
    from litmus.warehouse import connect

    paths = litmus_paths(workdir / "home").ensure()
    build_warehouse(paths, ["pending", "clean-a"])
    queue = paths.audit / "queue.csv"
    with connect(paths.duckdb_path) as con:
        export_audit_queue(con, queue)
    with queue.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    first = rows[0]
    first.update(verdict="safe", auditor="bench@example.org", reason="benchmark")
    verdicts = workdir / "verdicts.csv"
    with verdicts.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(first))
        writer.writeheader()
        writer.writerow(first)
    return paths.home, verdicts


def child_cpu(args: list[str]) -> tuple[float, dict[str, object]]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        [sys.executable, "-c", CHILD, *args],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--workdir", type=Path)
    options = parser.parse_args()
    workdir = options.workdir or Path(tempfile.mkdtemp(prefix="bench-audit-load-"))
    home, verdicts = build_home(workdir)
    commands = {
        "audit load FILE": lambda copy: ["--home", str(copy), "audit", "load", str(verdicts)],
        "audit load --help": lambda copy: ["--home", str(copy), "audit", "load", "--help"],
        "audit load (usage error)": lambda copy: ["--home", str(copy), "audit", "load"],
    }
    for name, arguments in commands.items():
        figures, dagster, status = [], set(), set()
        for repeat in range(options.repeats):
            copy = workdir / f"run-{repeat}"
            shutil.rmtree(copy, ignore_errors=True)
            shutil.copytree(home, copy)
            cpu, seen = child_cpu(arguments(copy))
            figures.append(cpu)
            dagster.add(seen["dagster"])
            status.add(seen["status"])
        print(
            f"{name:<26} median CPU {statistics.median(figures):.2f} s "
            f"(min {min(figures):.2f}, max {max(figures):.2f}; exit {sorted(status)}; "
            f"imports dagster: {sorted(dagster)})"
        )
    print(f"loadavg: {Path('/proc/loadavg').read_text().strip()}")


if __name__ == "__main__":
    main()
