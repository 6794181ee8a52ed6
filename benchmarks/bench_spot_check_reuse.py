"""The spot-check draw of a new release: CPU time of ``draw_spot_checks`` on a copy of a
built home, after one configuration's audited rows were rewritten (what a new release does).

    .venv/bin/python benchmarks/bench_spot_check_reuse.py HOME/warehouse.duckdb [--repeat 3]

Copies the warehouse, draws once (so every configuration's draw and digest is stored; a
warehouse of an older code is given its tokens here), then ``--repeat`` times: rewrite the
audited rows of the newest configuration (``refresh_audited_partition``) and time the draw.
Prints the CPU time (user + sys, all threads) of each draw and how many rows it holds. Run it
with another checkout's ``PYTHONPATH`` to time that code's draw on the same warehouse.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import tempfile
from pathlib import Path

import duckdb

from litmus.audit.audited import refresh_audited_partition
from litmus.audit.spotcheck import SpotCheckPolicy, draw_spot_checks


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("warehouse", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="litmus-bench-spot-") as folder:
        copy = Path(folder) / "warehouse.duckdb"
        shutil.copyfile(args.warehouse, copy)
        con = duckdb.connect(str(copy))
        policy = SpotCheckPolicy()
        newest = con.execute(
            "SELECT partition_key FROM audited_trajectories "
            "ORDER BY model_release DESC, partition_key DESC LIMIT 1"
        ).fetchone()[0]
        started = cpu_s()
        drawn = draw_spot_checks(con, policy)
        print(f"{draw_spot_checks.__module__} from {Path(__import__('litmus').__file__).parent}")
        print(f"first draw: {cpu_s() - started:.3f} s CPU, {drawn:,} rows")
        times = []
        for _ in range(args.repeat):
            refresh_audited_partition(con, newest)
            started = cpu_s()
            drawn = draw_spot_checks(con, policy)
            times.append(cpu_s() - started)
        print(
            f"draw after {newest!r} was rewritten: "
            f"{' / '.join(f'{t:.3f}' for t in times)} s CPU (min {min(times):.3f}), "
            f"{drawn:,} rows; load {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
        )
        con.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
