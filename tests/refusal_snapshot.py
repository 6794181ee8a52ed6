"""The stored refusal-verdict snapshot: which trajectories it holds, and how it is written.

``tests/data/refusal_verdict_snapshot.jsonl.gz`` records, for a few thousand agent
trajectories, the rule classifier's verdict (refusal, step, confidence, engagement) and the
rules that fire on each text, as the reference path (Python's regexes alone) gives them.
``tests/test_refusal_snapshot.py`` checks that every classification path still gives exactly
these answers, so a speed change can never move a verdict unnoticed.

A deliberate change to the rules changes the snapshot: bump the classifier's version, then
regenerate it and review the diff of verdicts it prints::

    .venv/bin/python tests/refusal_snapshot.py

The trajectories are the XSTest development completions and the AgentHarm transcripts' agent
texts (../shared/data, sources and licences in its README), the agent texts of the sample
generator's runs, and adversarial variants of them (Unicode, case, punctuation, whitespace,
long and empty texts). Storing the texts makes the test independent of ../shared/data.
"""

from __future__ import annotations

import ast
import gzip
import json
import random
import re
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from litmus.labeling import refusal
from litmus.labeling.agent_texts import agent_texts
from litmus.labeling.refusal import RefusalVerdict, RuleBasedRefusalClassifier
from litmus.labeling.refusal_eval import DEFAULT_XSTEST_FOLDER, load_xstest_completions
from litmus.sample import generate_sample

SNAPSHOT_PATH = Path(__file__).resolve().parent / "data" / "refusal_verdict_snapshot.jsonl.gz"
SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
TRANSCRIPTS = SHARED_DATA / "agentharm_transcripts" / "agentharm_trajectories.json"
SAMPLE_FAMILIES = 48
VARIED_TEXTS = 160  # base texts each adversarial variant is applied to
VARIED_MAX_CHARS = 800  # (short ones, to keep the snapshot small)
SEED = 17

# Every rule of the classifier by its name in litmus/labeling/refusal.py ("_DECLINE" → "decline").
RULE_NAMES: dict[int, str] = {
    id(value): name.strip("_").lower()
    for name, value in vars(refusal).items()
    if isinstance(value, refusal._Rule)
}
_CACHED = (
    refusal._prepare,
    refusal._cue_strength,
    refusal._part,
    refusal._candidate_rules,
    refusal._decline_end,
    refusal._acknowledges,
    refusal._names_withheld,
    refusal._pivot_tail,
)


def clear_caches() -> None:
    for cached in _CACHED:
        cached.cache_clear()


def reference_verdicts(trajectories: Sequence[Sequence[str]]) -> list[RefusalVerdict]:
    """``classify`` on each trajectory with every rule read by Python's regexes alone."""
    previous = refusal._SCANNING
    refusal._SCANNING = False
    clear_caches()
    try:
        classifier = RuleBasedRefusalClassifier()
        return [classifier.classify(texts) for texts in trajectories]
    finally:
        refusal._SCANNING = previous
        clear_caches()


# Rules that only tell the scanner where a rule's lookaheads could fail
# (``_Rule.lookahead_guard``): a device of the scanner, not a rule of the classifier.
_GUARDS = {id(rule.lookahead_guard) for rule in refusal._RULES if rule.lookahead_guard}


def rule_tags(text: str) -> list[str]:
    """The rules that match some prepared sentence of ``text`` (reference reading)."""
    sentences = refusal._prepare.__wrapped__(text).sentences
    return sorted(
        RULE_NAMES[id(rule)]
        for rule in refusal._RULES
        if id(rule) not in _GUARDS and any(rule.reference_search(s) is not None for s in sentences)
    )


def snapshot_row(texts: Sequence[str], verdict: RefusalVerdict) -> dict[str, Any]:
    return {
        "texts": list(texts),
        "refusal": verdict.refusal,
        "step": verdict.step,
        "confidence": verdict.confidence,
        "engagement": verdict.engagement,
        "rules": [rule_tags(text) for text in texts],
    }


def verdict_of(row: dict[str, Any]) -> RefusalVerdict:
    return RefusalVerdict(row["refusal"], row["step"], row["confidence"], row["engagement"])


def read_snapshot(path: Path = SNAPSHOT_PATH) -> list[dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


# --------------------------------------------------------------------------- the texts


def xstest_texts() -> list[str]:
    return [c.completion for c in load_xstest_completions(DEFAULT_XSTEST_FOLDER)]


def transcript_texts() -> list[str]:
    """What the agents of the AgentHarm transcripts say: thoughts and final responses."""
    texts = []
    for record in json.loads(TRANSCRIPTS.read_text(encoding="utf-8")):
        for turn in record["contents"][0]:
            if turn["role"] != "agent":
                continue
            if turn.get("thought"):
                texts.append(turn["thought"])
            action = turn.get("action") or ""
            if action.startswith("Complete{"):
                try:
                    texts.append(ast.literal_eval(action[len("Complete") :])["response"])
                except (ValueError, SyntaxError, KeyError, TypeError):
                    texts.append(action)  # unparseable: the raw action is a text too
    return texts


def sample_trajectories() -> list[list[str]]:
    """The agent texts of the sample runs, one trajectory per record, as the labeler reads
    them (step messages, then the final response)."""
    trajectories: dict[tuple[str, ...], None] = {}
    with tempfile.TemporaryDirectory() as folder:
        manifest = generate_sample(Path(folder), n_families=SAMPLE_FAMILIES)
        for path in manifest.run_paths.values():
            for line in path.read_text(encoding="utf-8").splitlines():
                record = json.loads(line)
                messages = ((i, s.get("message")) for i, s in enumerate(record["steps"]))
                texts = agent_texts(messages, record["final_response"], len(record["steps"]))
                if texts:
                    trajectories[tuple(text for _, text in texts)] = None
    return [list(t) for t in trajectories]


_VARIANTS: dict[str, Callable[[str, int], str]] = {
    "curly apostrophes": lambda t, i: t.replace("'", "\u2019"),
    "curly quotes": lambda t, i: re.sub(r'"([^"]*)"', "\u201c\\1\u201d", t),
    "no-break spaces": lambda t, i: t.replace(" ", "\xa0", 3),
    "foreign letters": lambda t, i: f"\u0130\u212a\u017f {t} \u00e9\u2014\U0001f642",
    "zero-width and combining": lambda t, i: t.replace(" ", "\u200b ", 2) + "e\u0301",
    "upper case": lambda t, i: t.upper(),
    "title case": lambda t, i: t.title(),
    "swapped case": lambda t, i: t.swapcase(),
    "no punctuation": lambda t, i: re.sub(r"[^\w\s]", "", t),
    "exclamations": lambda t, i: t.replace(".", "!!!"),
    "ellipses": lambda t, i: t.replace(". ", "... ").replace(", ", " — "),
    "doubled spaces": lambda t, i: t.replace(" ", "  "),
    "tabs": lambda t, i: t.replace(" ", "\t", 2),
    "line breaks": lambda t, i: t.replace(". ", ".\n").replace(", ", ",\r\n"),
    "indented": lambda t, i: "    " + t.replace("\n", "\n    "),
    "quoted": lambda t, i: f'"{t}"' if i % 2 else f"> {t}",
    "in code": lambda t, i: f"`{t}`" if i % 2 else f"```\n{t}\n```",
    "unique id": lambda t, i: f"{t} (ref {i})",
    "ticket prefix": lambda t, i: f"[ticket {i}] {t}",
    "first sentence": lambda t, i: re.split(r"(?<=[.!?])\s+", t, maxsplit=1)[0],
}
_EMPTY_TEXTS = ["", " ", "\n", "\t \n", ".", "...", "?", "```", '""', "> ", "codeblock"]


def _long_texts(texts: Sequence[str], rng: random.Random) -> Iterator[str]:
    """Texts past the RE2 scanner's limit (litmus/refusal_scan.MAX_SCANNED_CHARS), some
    without a line break so a single sentence is that long."""
    for size, joint in ((6, "\n\n"), (12, " "), (25, "\n"), (40, " ")):
        for _ in range(3):
            yield joint.join(rng.choices(texts, k=size))


def _spliced(texts: Sequence[str], count: int, rng: random.Random) -> Iterator[str]:
    joints = ["", " ", "\n", ". ", "\n\n", ' "', "' ", "`", "\t", "    ", "\u2019", "\xa0"]
    for _ in range(count):
        pieces = []
        for _ in range(rng.randint(1, 3)):
            text = rng.choice(texts)
            start = rng.randrange(len(text) + 1)
            pieces.append(text[start : start + rng.randint(1, 160)])
        yield rng.choice(joints).join(pieces)


def snapshot_trajectories() -> list[list[str]]:
    """Every trajectory of the snapshot, in a fixed order, each once."""
    from test_refusal_bulk import _random_texts  # the fragments that reach the bulk edges

    rng = random.Random(SEED)
    real = xstest_texts() + transcript_texts()
    sampled = sample_trajectories()
    sample_texts = [text for trajectory in sampled for text in trajectory]
    short = [text for text in real if len(text) <= VARIED_MAX_CHARS]
    base = rng.sample(short, VARIED_TEXTS // 2) + rng.sample(sample_texts, VARIED_TEXTS // 2)
    singles = [*real, *sample_texts, *_EMPTY_TEXTS]
    for variant in _VARIANTS.values():
        singles += [variant(text, i) for i, text in enumerate(base)]
    singles += _long_texts(real, rng)
    singles += _spliced(real, 600, rng)
    singles += _random_texts(600, seed=SEED)
    # trajectories of several texts: declines after narration, narration after declines
    mixed = [rng.sample(singles, rng.randint(2, 4)) for _ in range(300)]
    ordered: dict[tuple[str, ...], None] = {}
    for trajectory in [*([t] for t in singles), *sampled, *mixed]:
        ordered.setdefault(tuple(trajectory), None)
    return [list(t) for t in ordered]


def write_snapshot(path: Path = SNAPSHOT_PATH) -> list[dict[str, Any]]:
    trajectories = snapshot_trajectories()
    rows = [
        snapshot_row(texts, verdict)
        for texts, verdict in zip(trajectories, reference_verdicts(trajectories), strict=True)
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    # mtime=0: the same rows give the same bytes, so only a real change shows in a diff
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as handle:
        for row in rows:
            handle.write((json.dumps(row, ensure_ascii=False) + "\n").encode("utf-8"))
    return rows


def main() -> None:
    previous = read_snapshot() if SNAPSHOT_PATH.exists() else []
    before = {tuple(row["texts"]): row for row in previous}
    rows = write_snapshot()
    changed = [r for r in rows if tuple(r["texts"]) in before and before[tuple(r["texts"])] != r]
    for row in changed[:20]:
        old = before[tuple(row["texts"])]
        print(
            f"{row['texts']!r:.100}: {old['refusal']}/{old['confidence']} → "
            f"{row['refusal']}/{row['confidence']}"
        )
    added = sum(tuple(r["texts"]) not in before for r in rows)
    print(
        f"{len(rows)} trajectories written to {SNAPSHOT_PATH} ({len(changed)}"
        f" changed, {added} new, {len(previous) + added - len(rows)} dropped)",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
