"""CPU time of the publishing steps' parts on a copy of a built warehouse.

    .venv/bin/python benchmarks/profile_publishing.py WAREHOUSE.duckdb [--repeat 3]

Copies the warehouse, then times (user + sys of this process, all threads; best of
``--repeat``) each part of what ``leaderboard``, ``run_fingerprints``, ``leaderboard_receipt``
and ``release_drift`` read from the warehouse, on the copy. Nothing is written.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import duckdb

from litmus.fingerprint import compute_run_fingerprints
from litmus.metrics.leaderboard import leaderboard_from_warehouse
from litmus.releases.drift import compute_release_drift, read_drift_inputs, stored_drift_pairs
from litmus.releases.drift_plot import drift_plot_png, write_drift_plots
from litmus.reuse import ConfigurationCounts
from litmus.trust.receipts.build import (
    audit_facts,
    build_receipt,
    configuration_facts,
    gate_facts,
    label_digests,
    raw_file_facts,
)


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def best_cpu(work: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = cpu_seconds()
        work()
        times.append(cpu_seconds() - started)
    return min(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("warehouse", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="litmus-profile-publishing-") as folder:
        copy = Path(folder) / "warehouse.duckdb"
        shutil.copyfile(args.warehouse, copy)
        con = duckdb.connect(os.fspath(copy))
        parts: dict[str, Callable[[], object]] = {
            "compute_run_fingerprints": lambda: compute_run_fingerprints(con),
            "leaderboard_from_warehouse (all)": lambda: leaderboard_from_warehouse(con),
            "build_receipt (all)": lambda: build_receipt(con),
            "receipt: label_digests": lambda: label_digests(con),
            "receipt: configuration_facts": lambda: configuration_facts(con),
            "receipt: audit_facts": lambda: audit_facts(con),
            "receipt: gate_facts": lambda: gate_facts(con),
            "receipt: raw_file_facts": lambda: raw_file_facts(con),
            "drift: read_drift_inputs": lambda: read_drift_inputs(con),
            "drift: stored_drift_pairs": lambda: stored_drift_pairs(con),
            "drift: ConfigurationCounts.from_warehouse": lambda: ConfigurationCounts.from_warehouse(
                con
            ),
        }
        inputs = read_drift_inputs(con)
        drift = compute_release_drift(
            inputs.configurations,
            ConfigurationCounts.from_warehouse(con),
            withheld=inputs.withheld,
            reusable=stored_drift_pairs(con),
        )
        cis = con.sql(
            "SELECT partition_key, metric, estimate, ci_low, ci_high FROM metric_cis"
        ).df()
        values = drift.releases.merge(cis, on="partition_key", how="left")
        exports = Path(folder) / "exports"

        def draw_every_plot() -> None:
            for lineage, rows in values.groupby("lineage_key", sort=True):
                comparisons = drift.comparisons[drift.comparisons["lineage_key"] == lineage]
                drift_plot_png(str(lineage), rows, comparisons)

        parts["drift plots: drawn (as before)"] = draw_every_plot
        # staged into the published folder itself: the second call finds them published
        write_drift_plots(con, exports, exports, drift.releases, drift.comparisons, cis)
        parts["drift plots: unchanged, kept"] = lambda: write_drift_plots(
            con, exports, exports, drift.releases, drift.comparisons, cis
        )
        for name, work in parts.items():
            print(f"{name:48s} {best_cpu(work, args.repeat):6.3f} s CPU")
        con.close()
    print(f"load {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
