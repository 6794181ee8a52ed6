"""Benchmark: the refusal classifier over N unique agent texts, bulk path against today's path.

Texts are real agent replies made unique the way runs make them unique (an id appended):
``--mix agent`` draws from the labeler benchmark's six agent replies and the agent texts of
the AgentHarm transcripts (../shared/data/agentharm_transcripts); ``--mix chat`` from the
XSTest completions (long chat answers, about half of them refusals). The bulk path
(``RuleBasedRefusalClassifier.classify_many``: a DuckDB/RE2 pass settles the texts that
cannot hold a refusal cue, the rules read the rest) is timed against classifying each text
with ``classify([text])``, and every verdict is compared.

    .venv/bin/python benchmarks/bench_refusal.py [--texts 1000000] [--mix agent|chat]
        [--workers 1] [--reference-sample 0]

``--reference-sample N`` times and checks today's path on N texts only (0: on all of them).
The machine's load average is printed: on a shared machine the figures move with it.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import random
import time
from pathlib import Path

from litmus import refusal
from litmus.refusal import RuleBasedRefusalClassifier
from litmus.refusal_bulk import settled_in_sql
from litmus.refusal_eval import DEFAULT_XSTEST_FOLDER, load_xstest_completions

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
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--reference-sample", type=int, default=0)
    args = parser.parse_args()

    pool = agent_pool() if args.mix == "agent" else chat_pool()
    texts = [f"{pool[i % len(pool)]} (ref {i})" for i in range(args.texts)]
    print(
        f"{len(texts):,} unique texts, mix {args.mix} ({len(pool)} real texts, mean "
        f"{sum(map(len, pool)) / len(pool):.0f} characters); load average "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    )
    classifier = RuleBasedRefusalClassifier()

    started = time.perf_counter()
    settled = settled_in_sql(texts)
    clear_caches()
    settle_s = time.perf_counter() - started
    print(
        f"DuckDB/RE2 settlement alone: {settle_s:.2f} s, {len(settled) / len(texts):.1%} of "
        "texts settled without the rules"
    )

    started = time.perf_counter()
    bulk = classifier.classify_many([[t] for t in texts], workers=args.workers)
    bulk_s = time.perf_counter() - started
    print(
        f"bulk path (classify_many, workers={args.workers}): {bulk_s:.2f} s = "
        f"{len(texts) / bulk_s:,.0f} texts/s"
    )

    sample = range(len(texts))
    if args.reference_sample:
        sample = sorted(random.Random(0).sample(range(len(texts)), args.reference_sample))
    clear_caches()  # today's path starts as cold as the bulk path did
    started = time.perf_counter()
    reference = [classifier.classify([texts[i]]) for i in sample]
    reference_s = time.perf_counter() - started
    per_text = reference_s / len(sample)
    mismatches = sum(bulk[i] != verdict for i, verdict in zip(sample, reference, strict=True))
    print(
        f"today's path (classify([text]) per text) on {len(sample):,} texts: {reference_s:.2f} s"
        f" = {1 / per_text:,.0f} texts/s; projected for all: {per_text * len(texts):.1f} s"
    )
    print(f"speed-up {per_text * len(texts) / bulk_s:.2f}x; verdicts differing: {mismatches}")
    if len(texts) >= 1_000_000:
        target = "met" if bulk_s <= 10 and not mismatches else "NOT met"
        print(f"target (<= 10 s for 1,000,000 texts, identical verdicts): {target}")


def clear_caches() -> None:
    for cached in (refusal._cue_strength, refusal._part, refusal._prepare):
        cached.cache_clear()


if __name__ == "__main__":
    main()
