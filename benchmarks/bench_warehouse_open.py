"""CPU time of opening the warehouse, writer then reader: what every CLI command and Dagster
step pays before it does anything.

    .venv/bin/python benchmarks/bench_warehouse_open.py <copy of a warehouse.duckdb> [N]

The first writer open (not measured) applies any schema files the copy lacks; run the same
file through two checkouts' interpreters to compare them.
"""

from __future__ import annotations

import resource
import sys

from litmus.warehouse import connect, connect_read_only


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main(db: str, n: int) -> None:
    with connect(db):
        pass  # an upgrade happens here, outside the measurement
    for opener in (connect, connect_read_only):
        start = cpu_seconds()
        for _ in range(n):
            with opener(db):
                pass
        print(f"{opener.__name__}: {1000 * (cpu_seconds() - start) / n:.2f} ms CPU per open")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 200)
