"""CPU of the trajectory gates of every configuration of a built warehouse (GE's validations).

    python benchmarks/bench_gate_validation.py WAREHOUSE.duckdb [--rounds 3]

Runs ``evaluate_partition_gates`` for every configuration in a copy of the warehouse, once to
pay GE's import and first use, then ``--rounds`` times, and prints the CPU (user+sys) per
round. Run it with ``PYTHONPATH`` pointing at the checkout to compare.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import tempfile
from pathlib import Path

import duckdb

from litmus.gates.publication_gates import evaluate_partition_gates, load_gate_suites


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("warehouse", type=Path)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        copy = Path(folder) / "warehouse.duckdb"
        shutil.copyfile(args.warehouse, copy)
        con = duckdb.connect(str(copy))
        keys = [
            row[0]
            for row in con.execute(
                "SELECT DISTINCT partition_key FROM audited_trajectories ORDER BY 1"
            ).fetchall()
        ]
        suites = load_gate_suites()
        start = _cpu()
        first = [evaluate_partition_gates(con, key, suites) for key in keys]
        print(f"first round (GE import and first use): {_cpu() - start:.2f} s CPU")
        for round_ in range(1, args.rounds + 1):
            start = _cpu()
            again = [evaluate_partition_gates(con, key, suites) for key in keys]
            print(f"round {round_}: {_cpu() - start:.2f} s CPU for {len(keys)} configurations")
            assert [[(r.gate, r.passed, r.message) for r in rs] for rs in again] == [
                [(r.gate, r.passed, r.message) for r in rs] for rs in first
            ]
        con.close()


if __name__ == "__main__":
    main()
