"""The audit queue of a new release: CPU time of what the ``audit_queue`` asset computes and
stores, on a copy of a built home, after one configuration was labeled again (what a new
release does).

    .venv/bin/python benchmarks/bench_audit_queue_reuse.py HOME/warehouse.duckdb [--repeat 3]

Copies the warehouse and stores the queue once (so every configuration's rows and digests are
stored; a warehouse of an older code gets its labels' tokens here), then ``--repeat`` times:
label the newest configuration again (``label_partition``, untimed) and time the asset's work
(query, ``replace_rows`` and, with reuse, the digests) in one transaction. Prints the CPU time
(user + sys, all threads) of each and the rows stored. ``--cold``: each timed store runs in a
fresh process, as a Dagster step does (DuckDB's caches cold; imports not timed). With another
checkout's ``PYTHONPATH`` (one without ``litmus.audit.queue_reuse``) it times that code's full
query on the same copy.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import duckdb

from litmus.audit.workflow import audit_queue
from litmus.labeling.sql import label_partition
from litmus.warehouse import replace_rows, transaction


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


try:  # imported here, not timed: a Dagster step imports its code before it runs
    from litmus.audit.queue_reuse import refresh_audit_queue
    from litmus.reuse import record_digests
except ImportError:  # the code before reuse
    refresh_audit_queue = None


def store_queue(con: duckdb.DuckDBPyConnection) -> list[str] | None:
    """What this checkout's ``audit_queue`` asset does; the configurations queried again
    (None: the code has no reuse and queries all of them)."""
    if refresh_audit_queue is None:
        with transaction(con):
            replace_rows(con, "audit_queue", audit_queue(con))
        return None
    with transaction(con):
        digests, recomputed = refresh_audit_queue(con)
        record_digests(con, "audit_queue", digests)
    return recomputed


def stored_digest(con: duckdb.DuckDBPyConnection) -> str:
    rows = con.execute("SELECT * FROM audit_queue").fetchall()
    return hashlib.sha256(repr(rows).encode()).hexdigest()[:16]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("warehouse", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cold", action="store_true", help="time each store in a new process")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:  # one store on the given copy, timed in this fresh process
        con = duckdb.connect(str(args.warehouse))
        started = cpu_s()
        recomputed = store_queue(con)
        print(json.dumps(recomputed))
        print(f"{cpu_s() - started:.6f}")
        con.close()
        return 0
    with tempfile.TemporaryDirectory(prefix="litmus-bench-queue-") as folder:
        copy = Path(folder) / "warehouse.duckdb"
        shutil.copyfile(args.warehouse, copy)
        con = duckdb.connect(str(copy))
        newest = con.execute(
            "SELECT partition_key FROM audited_trajectories "
            "ORDER BY model_release DESC, partition_key DESC LIMIT 1"
        ).fetchone()[0]
        started = cpu_s()
        store_queue(con)
        print(f"code from {Path(__import__('litmus').__file__).parent}")
        print(f"first store: {cpu_s() - started:.3f} s CPU")
        times = []
        recomputed: list[str] | None = None
        for _ in range(args.repeat):
            label_partition(con, newest)
            if args.cold:
                con.close()
                child = [sys.executable, __file__, str(copy), "--child"]
                output = subprocess.run(child, check=True, capture_output=True, text=True)
                *_, queried, seconds = output.stdout.splitlines()
                times.append(float(seconds))
                recomputed = json.loads(queried)
                con = duckdb.connect(str(copy))
                continue
            started = cpu_s()
            recomputed = store_queue(con)
            times.append(cpu_s() - started)
        rows = con.execute("SELECT count(*) FROM audit_queue").fetchone()[0]
        print(
            f"store after {newest!r} was labeled again: "
            f"{' / '.join(f'{t:.3f}' for t in times)} s CPU (min {min(times):.3f}), "
            f"{rows:,} rows (sha256 {stored_digest(con)}), queried again: "
            f"{'all' if recomputed is None else recomputed}; "
            f"load {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
        )
        con.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
