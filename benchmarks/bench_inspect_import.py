"""Benchmark: the LITMUS import of an Inspect ``.eval`` log against Inspect's own reader.

1. Run the test fixture task (tests/inspect_fixtures) offline once to get real Inspect
   samples, then replicate them under fresh sample ids into one N-sample log written with
   Inspect's own ``write_eval_log``.
2. On that same log, each in a fresh subprocess (so generation memory does not count):
   ``import_inspect_log`` (the `litmus import-inspect` / sensor reader: the fast reader with
   its reader processes), then Inspect's ``read_eval_log`` of the whole log. Reports
   samples/second of both and their ratio, and peak RSS: the importing process's and its
   largest reader process's. ``--trace`` adds a run under tracemalloc (Python heap peak).

    .venv/bin/python benchmarks/bench_inspect_import.py [--samples 10000] [--workdir DIR]
        [--log EXISTING.eval] [--processes N] [--trace]
        [--replicate-to 100000 --inspect-streaming --inspect-samples 10000]

Figures vary by machine; nothing here asserts on them.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import resource
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
import zipfile
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


def replicate_log(source: Path, target: Path, samples: int) -> Path:
    """Grow an Inspect-written log to ``samples`` samples at the zip level: its sample members
    copied under fresh ids (the id inside rewritten, zstd as Inspect writes them), the
    header's sample ids and the summaries to match. ``write_eval_log`` holds every sample in
    memory (about 180 kB each as models), which rules it out far beyond 10,000 samples."""
    import inspect_ai.log  # noqa: F401  (installs Inspect's zstd support into zipfile)

    zstd = 93
    with zipfile.ZipFile(source) as original:
        names = [n for n in original.namelist() if n.startswith("samples/")]
        header = json.loads(original.read("header.json"))
        summaries = json.loads(original.read("summaries.json"))
        members = {name: original.read(name) for name in names}
        others = {
            n: original.read(n)
            for n in original.namelist()
            if n not in members and n not in ("header.json", "summaries.json")
        }
    ids: list[str] = []
    new_summaries: list[Any] = []
    with zipfile.ZipFile(target, "w", compression=zstd) as copy:
        for name, data in others.items():
            copy.writestr(name, data)
        for index in range(samples):
            template = members[names[index % len(names)]]
            summary = dict(summaries[index % len(summaries)])
            sample_id = f"r{index:06d}"
            ids.append(sample_id)
            summary["id"] = sample_id
            new_summaries.append(summary)
            # Inspect writes the id first: {"id":"...","epoch":1,...}
            rest = template[template.index(b',"epoch":') :]
            data = b'{"id":' + json.dumps(sample_id).encode() + rest
            copy.writestr(f"samples/{sample_id}_epoch_1.json", data)
        header["eval"]["dataset"]["sample_ids"] = ids
        header["eval"]["dataset"]["samples"] = samples
        copy.writestr("summaries.json", json.dumps(new_summaries))
        copy.writestr("header.json", json.dumps(header))
    return target


class _MemorySampler(threading.Thread):
    """Samples the RSS of this process and its reader processes every 50 ms: the peak of
    their sum, and the largest reader's. (A child's own ru_maxrss would count the parent's
    pages it shares between fork and exec.)"""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.stopped = threading.Event()
        self.peak_total = self.peak_reader = 0

    def run(self) -> None:
        import psutil

        me = psutil.Process()
        while not self.stopped.wait(0.05):
            total = me.memory_info().rss
            for child in me.children(recursive=True):
                with contextlib.suppress(psutil.Error):
                    rss = child.memory_info().rss
                    total += rss
                    self.peak_reader = max(self.peak_reader, rss)
            self.peak_total = max(self.peak_total, total)


def child_import(log_path: Path, out: Path, trace: bool, processes: int | None) -> dict[str, Any]:
    import inspect_ai.log  # noqa: F401  (load Inspect before the baseline is taken)

    from litmus.importers.inspect_log import import_inspect_log

    _reset_peak_rss()
    baseline = _rss_mb("VmRSS")
    if trace:
        tracemalloc.start()
    sampler = _MemorySampler()
    sampler.start()
    started = time.perf_counter()
    summary = import_inspect_log(log_path, out, processes=processes)
    seconds = time.perf_counter() - started
    sampler.stopped.set()
    sampler.join()
    figures: dict[str, Any] = {
        "records": summary.records,
        "problems": summary.problem_count,
        "seconds": round(seconds, 2),
        "samples_per_second": round((summary.records + summary.problem_count) / seconds, 1),
        "baseline_rss_mb": round(baseline, 1),
        "peak_rss_mb": round(_rss_mb("VmHWM"), 1),
        "reader_peak_rss_mb": round(sampler.peak_reader / 2**20, 1),
        # this process and its readers together (sampled)
        "total_peak_rss_mb": round(sampler.peak_total / 2**20, 1),
    }
    if trace:
        figures["python_heap_peak_mb"] = round(tracemalloc.get_traced_memory()[1] / 2**20, 1)
    return figures


def child_full_read(log_path: Path, streaming: bool, limit: int | None) -> dict[str, Any]:
    from inspect_ai.log import read_eval_log

    import litmus.importers.inspect_log  # noqa: F401  (same baseline as the import)

    _reset_peak_rss()
    baseline = _rss_mb("VmRSS")
    started = time.perf_counter()
    if streaming:
        # What read_eval_log does for each sample (inflate, json.loads, EvalSample
        # validation), one sample at a time through one open zip: Inspect's public streaming
        # readers re-read the zip directory for every sample (quadratic in the log's size),
        # and read_eval_log holds the whole log (about 180 MB per 1,000 samples).
        from inspect_ai._util.constants import get_deserializing_context
        from inspect_ai.log import EvalSample

        with zipfile.ZipFile(log_path) as archive:
            names = [n for n in archive.namelist() if n.startswith("samples/")]
            names = names[:limit] if limit is not None else names
            for name in names:
                EvalSample.model_validate(
                    json.loads(archive.read(name)), context=get_deserializing_context()
                )
            count = len(names)
    else:
        count = len(read_eval_log(str(log_path)).samples or [])
    seconds = time.perf_counter() - started
    return {
        "reader": "Inspect's per-sample parsing" if streaming else "read_eval_log",
        "samples": count,
        "seconds": round(seconds, 2),
        "samples_per_second": round(count / seconds, 1),
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
    parser.add_argument("--processes", type=int, default=None, help="reader processes")
    parser.add_argument("--trace", action="store_true", help="also run under tracemalloc")
    parser.add_argument(
        "--replicate-to",
        type=int,
        default=None,
        help="grow the written log to this many samples at the zip level (beyond 10,000)",
    )
    parser.add_argument(
        "--inspect-streaming",
        action="store_true",
        help="compare with Inspect's parsing of one sample at a time (what read_eval_log does "
        "per sample) instead of read_eval_log of the whole log (about 180 MB per 1,000 "
        "samples); for logs far beyond 10,000 samples",
    )
    parser.add_argument(
        "--inspect-samples",
        type=int,
        default=None,
        help="with --inspect-streaming: time Inspect on the log's first N samples only (its "
        "rate is per sample)",
    )
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.child:
        mode, log_path, *rest = args.child
        if mode in ("full-read", "stream-read"):
            limit = int(rest[0]) if rest and rest[0] != "all" else None
            result = child_full_read(Path(log_path), streaming=mode == "stream-read", limit=limit)
        else:
            processes = int(rest[1]) if rest[1] != "auto" else None
            result = child_import(
                Path(log_path), Path(rest[0]), trace=mode == "trace", processes=processes
            )
        print(json.dumps(result))
        return

    with tempfile.TemporaryDirectory(prefix="bench-inspect-") as scratch:
        workdir = args.workdir or Path(scratch)
        workdir.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        log_path = args.log or generate_log(workdir, args.samples)
        if args.replicate_to:
            log_path = replicate_log(
                log_path, workdir / f"bench-{args.replicate_to}.eval", args.replicate_to
            )
        print(
            f"log {log_path.stat().st_size / 2**20:.1f} MiB "
            f"(ready in {time.perf_counter() - started:.1f}s): {log_path}"
        )
        processes = "auto" if args.processes is None else str(args.processes)
        imported = run_child("import", str(log_path), str(workdir / "records.jsonl"), processes)
        print("LITMUS import           ", json.dumps(imported))
        if args.trace:
            traced = run_child(
                "trace", str(log_path), str(workdir / "records-traced.jsonl"), processes
            )
            print("  with tracemalloc      ", json.dumps(traced))
        limit = "all" if args.inspect_samples is None else str(args.inspect_samples)
        reader = "stream-read" if args.inspect_streaming else "full-read"
        whole = run_child(reader, str(log_path), limit)
        print("Inspect's reader        ", json.dumps(whole))
        ratio = imported["samples_per_second"] / whole["samples_per_second"]
        print(
            f"samples/s: LITMUS {imported['samples_per_second']:,.0f} vs Inspect "
            f"{whole['samples_per_second']:,.0f} = {ratio:.1f}x; peak RSS: LITMUS "
            f"{imported['total_peak_rss_mb']:.0f} MB in all (importing process "
            f"{imported['peak_rss_mb']:.0f} MB, largest reader process "
            f"{imported['reader_peak_rss_mb']:.0f} MB), Inspect ({whole['reader']}) "
            f"{whole['peak_rss_mb']:.0f} MB"
        )


if __name__ == "__main__":
    main()
