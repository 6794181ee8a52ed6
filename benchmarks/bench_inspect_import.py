"""Benchmark: stream a 10,000-sample Inspect ``.eval`` log into native JSONL.

1. Run the test fixture task (tests/inspect_fixtures) offline once to get real Inspect
   samples, then replicate them under fresh sample ids into one N-sample log written with
   Inspect's own ``write_eval_log``.
2. Import it in a fresh subprocess (so generation memory does not count) and report
   samples/second and peak RSS; a second subprocess measures the Python heap peak with
   tracemalloc; a third reads the whole log with ``read_eval_log`` for comparison.

    .venv/bin/python benchmarks/bench_inspect_import.py [--samples 10000] [--workdir DIR]
        [--log EXISTING.eval]

Figures vary by machine; nothing here asserts on them.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def _reset_peak_rss() -> bool:
    """Reset the kernel's peak-RSS mark so start-up (imports) does not mask the import's peak."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def _rss_mb(field: str) -> float:
    """VmRSS (current) or VmHWM (peak since the last reset) in MiB; ru_maxrss off Linux."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def generate_log(workdir: Path, samples: int) -> Path:
    sys.path.insert(0, str(REPO / "tests"))
    from inspect_ai.log import read_eval_log, write_eval_log

    from inspect_fixtures.litmus_fixture_task import run_fixture_evals

    template_path = run_fixture_evals(workdir / "template", ["blocked"], epochs=1)["blocked"]
    template = read_eval_log(str(template_path))
    originals = template.samples or []
    replicated = [
        originals[index % len(originals)].model_copy(
            update={"id": f"{originals[index % len(originals)].id}-{index:05d}", "epoch": 1}
        )
        for index in range(samples)
    ]
    template.samples = replicated
    template.eval.dataset.samples = samples
    template.eval.dataset.sample_ids = [sample.id for sample in replicated]
    template.eval.config.epochs = 1
    log_path = workdir / f"bench-{samples}.eval"
    write_eval_log(template, str(log_path), format="eval")
    return log_path


def child_import(log_path: Path, out: Path, trace: bool) -> dict[str, Any]:
    import inspect_ai.log  # noqa: F401  (load Inspect before the baseline is taken)

    from litmus.importers.inspect_log import import_inspect_log

    _reset_peak_rss()
    baseline = _rss_mb("VmRSS")
    if trace:
        tracemalloc.start()
    started = time.perf_counter()
    summary = import_inspect_log(log_path, out)
    seconds = time.perf_counter() - started
    figures: dict[str, Any] = {
        "records": summary.records,
        "problems": summary.problem_count,
        "seconds": round(seconds, 2),
        "samples_per_second": round((summary.records + summary.problem_count) / seconds, 1),
        "baseline_rss_mb": round(baseline, 1),
        "peak_rss_mb": round(_rss_mb("VmHWM"), 1),
    }
    if trace:
        figures["python_heap_peak_mb"] = round(tracemalloc.get_traced_memory()[1] / 2**20, 1)
    return figures


def child_full_read(log_path: Path) -> dict[str, Any]:
    from inspect_ai.log import read_eval_log

    import litmus.importers.inspect_log  # noqa: F401  (same baseline as the import)

    _reset_peak_rss()
    baseline = _rss_mb("VmRSS")
    started = time.perf_counter()
    log = read_eval_log(str(log_path))
    return {
        "samples": len(log.samples or []),
        "seconds": round(time.perf_counter() - started, 2),
        "baseline_rss_mb": round(baseline, 1),
        "peak_rss_mb": round(_rss_mb("VmHWM"), 1),
    }


def run_child(*arguments: str) -> dict[str, Any]:
    completed = subprocess.run(
        [sys.executable, __file__, "--child", *arguments],
        check=True,
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    return json.loads(completed.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=10_000)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--log", type=Path, default=None, help="reuse a generated .eval log")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.child:
        mode, log_path, *rest = args.child
        if mode == "full-read":
            result = child_full_read(Path(log_path))
        else:
            result = child_import(Path(log_path), Path(rest[0]), trace=mode == "trace")
        print(json.dumps(result))
        return

    with tempfile.TemporaryDirectory(prefix="bench-inspect-") as scratch:
        workdir = args.workdir or Path(scratch)
        workdir.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        log_path = args.log or generate_log(workdir, args.samples)
        print(
            f"log {log_path.stat().st_size / 2**20:.1f} MiB "
            f"(ready in {time.perf_counter() - started:.1f}s): {log_path}"
        )
        streamed = run_child("import", str(log_path), str(workdir / "records.jsonl"))
        print("streaming import        ", json.dumps(streamed))
        traced = run_child("trace", str(log_path), str(workdir / "records-traced.jsonl"))
        print("  with tracemalloc      ", json.dumps(traced))
        whole = run_child("full-read", str(log_path))
        print("read_eval_log (whole)   ", json.dumps(whole))


if __name__ == "__main__":
    main()
