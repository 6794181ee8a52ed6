"""Benchmark: the refusal classifier over N unique agent texts, bulk path and per-text paths.

Texts are real agent replies made unique the way runs make them unique (an id appended):
``--mix agent`` draws from the labeler benchmark's six agent replies and the agent texts of
the AgentHarm transcripts (../shared/data/agentharm_transcripts); ``--mix chat`` from the
XSTest completions (long chat answers, about half of them refusals). Three paths are timed
and every verdict compared: the bulk path (``litmus.labeling.refusal_bulk.classify_many`` in
``--workers`` processes, optionally after the DuckDB/RE2 settlement of cue-free texts),
``classify([text])`` per text with the RE2 rule scanner, and ``classify([text])`` per text
with Python's regexes alone (the reference path of tests/test_refusal_scan.py).

    .venv/bin/python benchmarks/bench_refusal.py [--texts 1000000] [--mix agent|chat]
        [--workers 2] [--reference-sample 20000] [--sql-settlement]

``--reference-sample N`` times and checks the per-text paths on N texts only (0: on all of
them). Wall and CPU seconds (user + system, workers included) and the load average are
printed: on a shared machine wall time moves with the other users, CPU time much less.
"""

from __future__ import annotations

import argparse
import ast
import gc
import json
import os
import random
import resource
import sys
import time
from pathlib import Path

from litmus.labeling import refusal, refusal_bulk
from litmus.labeling.refusal import RuleBasedRefusalClassifier
from litmus.labeling.refusal_bulk import classify_many, settled_in_sql
from litmus.labeling.refusal_eval import DEFAULT_XSTEST_FOLDER, load_xstest_completions

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
LABELER_BENCH_TEXTS = [  # benchmarks/bench_labeler.py
    "I can't help with that.",
    "Done. The files are cleaned up.",
    "I'm sorry to hear that. Here is what I did: I rotated the logs.",
    "I won't wipe those backups, but I can help you set up a retention policy instead.",
    "The tool returned an error, so I could not finish.",
    "Here is the summary you asked for.",
]


def agent_pool() -> list[str]:
    pool = list(LABELER_BENCH_TEXTS)
    path = SHARED / "agentharm_transcripts" / "agentharm_trajectories.json"
    if path.exists():
        for record in json.loads(path.read_text()):
            for turn in record["contents"][0]:
                if turn["role"] != "agent":
                    continue
                # what the agent says: its thought, and the response of its final action
                # (other actions are tool calls, which the classifier never reads)
                if turn.get("thought"):
                    pool.append(turn["thought"])
                action = turn.get("action") or ""
                if action.startswith("Complete{"):
                    try:
                        pool.append(ast.literal_eval(action[len("Complete") :])["response"])
                    except (ValueError, SyntaxError, KeyError, TypeError):
                        continue
    return pool


def chat_pool() -> list[str]:
    return [c.completion for c in load_xstest_completions(DEFAULT_XSTEST_FOLDER)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=1_000_000)
    parser.add_argument("--mix", choices=["agent", "chat"], default="agent")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--reference-sample", type=int, default=20_000)
    parser.add_argument("--sql-settlement", action=argparse.BooleanOptionalAction, default=False)
    args = parser.parse_args()

    print("command: .venv/bin/python benchmarks/bench_refusal.py " + " ".join(sys.argv[1:]))
    pool = agent_pool() if args.mix == "agent" else chat_pool()
    texts = [f"{pool[i % len(pool)]} (ref {i})" for i in range(args.texts)]
    print(
        f"{len(texts):,} unique texts, mix {args.mix} ({len(pool)} real texts, mean "
        f"{sum(map(len, pool)) / len(pool):.0f} characters); load average "
        f"{_load()} on {os.cpu_count()} cores"
    )
    classifier = RuleBasedRefusalClassifier()

    if args.sql_settlement:
        with _Clock() as clock:
            settled = settled_in_sql(texts)
        print(
            f"DuckDB/RE2 settlement alone: {clock}, {len(settled) / len(texts):.1%} of texts "
            "settled without the rules"
        )

    # The input, one-message trajectories, built before the clock starts and with the cycle
    # collector paused: a million new lists set off full collections that would be timed as
    # the classifier's work.
    gc.disable()
    trajectories = [[t] for t in texts]
    gc.enable()
    clear_caches()
    with _Clock() as bulk_clock:
        bulk = classify_many(trajectories, workers=args.workers, sql_settlement=args.sql_settlement)
    print(
        f"bulk path (classify_many, workers={args.workers}, sql_settlement="
        f"{args.sql_settlement}): {bulk_clock} = {len(texts) / bulk_clock.wall:,.0f} texts/s,"
        f" {bulk_clock.cpu / len(texts) * 1e6:.1f} CPU-µs per text; load average {_load()}"
    )

    sample = range(len(texts))
    if args.reference_sample and args.reference_sample < len(texts):
        sample = sorted(random.Random(0).sample(range(len(texts)), args.reference_sample))
    paths = {}
    per_text_cpu = {}
    for name, scanning in (("rules with the RE2 scanner", True), ("Python regexes only", False)):
        refusal._SCANNING = scanning
        clear_caches()  # each path starts as cold as the bulk path did
        with _Clock() as clock:
            paths[name] = [classifier.classify([texts[i]]) for i in sample]
        per_text = clock.cpu / len(sample)
        per_text_cpu[name] = per_text
        print(
            f"classify([text]) per text, {name}, on {len(sample):,} texts: {clock}; "
            f"{per_text * 1e6:.1f} CPU-µs per text, projected for all {per_text * len(texts):.1f}"
            " CPU-s"
        )
    refusal._SCANNING = True
    fast, reference = paths.values()
    mismatches = sum(bulk[i] != verdict for i, verdict in zip(sample, reference, strict=True))
    mismatches += sum(a != b for a, b in zip(fast, reference, strict=True))
    print(f"verdicts compared: {len(sample):,} texts x 3 paths; differing: {mismatches}")
    bulk_per_text = bulk_clock.cpu / len(texts)
    print(
        "CPU per text, bulk path / per-text path in this run: "
        + ", ".join(f"{bulk_per_text / cpu:.2f} of {name}" for name, cpu in per_text_cpu.items())
        + f"; load average {_load()}"
    )
    if len(texts) >= 1_000_000:
        met = bulk_clock.wall <= 10 and not mismatches
        print(
            f"target (<= 10 s wall for 1,000,000 texts, identical verdicts): "
            f"{'met' if met else 'NOT met'} (wall {bulk_clock.wall:.1f} s, CPU "
            f"{bulk_clock.cpu:.1f} s of the 20 CPU-s two idle cores give in 10 s)"
        )


class _Clock:
    """Wall and CPU seconds (user + system, this process and its finished children)."""

    def __enter__(self) -> _Clock:
        self._wall = time.perf_counter()
        self._cpu = _cpu_seconds()
        return self

    def __exit__(self, *_: object) -> None:
        self.wall = time.perf_counter() - self._wall
        self.cpu = _cpu_seconds() - self._cpu

    def __str__(self) -> str:
        return f"{self.wall:.2f} s wall, {self.cpu:.2f} CPU-s"


def _cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def clear_caches() -> None:
    for cached in (
        refusal._cue_strength,
        refusal._part,
        refusal._prepare,
        refusal._candidate_rules,
        refusal._decline_end,
        refusal._acknowledges,
        refusal._names_withheld,
        refusal._pivot_tail,
        refusal_bulk._line_sentences,
        refusal_bulk._bits_reading,
    ):
        cached.cache_clear()


if __name__ == "__main__":
    main()
